"""The snapshot reader: Playwright MCP's YAML, as scripted solutions read it."""

from __future__ import annotations

import pytest

from openenv_mcp.worlds.browser.snapshot import Snapshot, SnapshotError, snapshot_text

RESULT = """### Page
- Page URL: http://shop.localhost:8000/checkout
### Snapshot
```yaml
- generic [active] [ref=f2e1]:
  - main [ref=f2e11]:
    - heading "Checkout" [level=1] [ref=f2e12]
    - paragraph [ref=f2e15]: "Subtotal: €94.50 (shipping is free from €100.00)"
    - group "Shipping method" [ref=f2e37]:
      - generic [ref=f2e39]:
        - 'radio "Standard (3-5 days): €4.95" [checked] [ref=f2e40]'
        - text: "Standard (3-5 days): €4.95"
    - table [ref=e18]:
      - rowgroup [ref=e26]:
        - row [ref=e27]:
          - cell "Deals Weekly" [ref=e28]
          - cell [ref=e29]:
            - 'link "Deals Weekly #214: spring picks" [ref=e30] [cursor=pointer]':
              - /url: /messages/23
        - row [ref=e33]:
          - cell [ref=e35]:
            - link [ref=e36] [cursor=pointer]:
              - /url: /messages/22
              - strong [ref=e37]: "Deals Weekly #213: spring picks"
    - button "Place order" [ref=f2e46]
```
"""


def test_finds_elements_by_role_and_name_through_yaml_quoting():
    page = Snapshot.of_result(RESULT)
    assert page.ref_of("button", "Place order") == "f2e46"
    radio = page.find("radio", contains="Standard")
    assert (radio.name, radio.ref, radio.attrs) == ("Standard (3-5 days): €4.95", "f2e40", {"checked": ""})
    link = page.find("link", "Deals Weekly #214: spring picks")
    assert (link.ref, link.url) == ("e30", "/messages/23")
    assert page.find("paragraph").text == "Subtotal: €94.50 (shipping is free from €100.00)"


def test_text_inside_a_nameless_link_is_found_by_contains():
    page = Snapshot.of_result(RESULT)
    assert page.find("link", contains="#213").ref == "e36"
    rows = page.find("table").find_all("row")
    assert [r.ref for r in rows] == ["e27", "e33"]
    assert rows[0].find_all("cell")[0].name == "Deals Weekly"


def test_a_missing_element_names_what_the_page_has():
    with pytest.raises(SnapshotError, match=r"no button 'Pay' in the snapshot; it has: .*button 'Place order'"):
        Snapshot.of_result(RESULT).ref_of("button", "Pay")


def test_a_result_without_a_snapshot_is_an_error():
    with pytest.raises(SnapshotError, match="holds no snapshot"):
        snapshot_text("### Page\n- Page URL: about:blank\n")
