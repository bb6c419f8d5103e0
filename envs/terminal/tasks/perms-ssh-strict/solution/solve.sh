#!/bin/sh
set -e
chown deploy /home/deploy && chmod go-w /home/deploy
chown -R deploy:deploy /home/deploy/.ssh
chmod 700 /home/deploy/.ssh
chmod 600 /home/deploy/.ssh/authorized_keys /home/deploy/.ssh/id_ed25519
chmod 644 /home/deploy/.ssh/id_ed25519.pub /home/deploy/.ssh/known_hosts
ls -la /home/deploy/.ssh
