from setuptools import setup

setup(name="tempconv", version="0.0.0", packages=["tempconv"])
