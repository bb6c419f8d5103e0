#!/bin/sh
# Build the task's repository at $1 (deterministic: fixed identities and dates).
set -e
export GIT_AUTHOR_NAME="Dana Dev" GIT_AUTHOR_EMAIL="dana@example.com" GIT_COMMITTER_NAME="Dana Dev" GIT_COMMITTER_EMAIL="dana@example.com"
git init -q -b main "$1"
cd "$1"
git config user.name "Dana Dev"; git config user.email "dana@example.com"
n=0
commit() {
  n=$((n + 1))
  export GIT_AUTHOR_DATE="2026-01-0${n}T10:00:00+00:00" GIT_COMMITTER_DATE="2026-01-0${n}T10:00:00+00:00"
  git add -A && git commit -q -m "$1"
}
mkdir -p app config
printf 'print("hello")\n' > app/main.py
printf '# shop service\n' > README.md
commit "Initial commit"
printf 'PORT=8080\nLOG_LEVEL=info\n' > config/app.env
printf 'import os\nprint(os.environ.get("PORT"))\n' > app/main.py
commit "Read the port from the environment"
printf 'DB_USER=shop\nDB_PASSWORD=hunter2-s3cret-7781\n' > config/secrets.env
printf 'def connect():\n    return "db"\n' > app/db.py
commit "Add database connection"
printf 'DB_USER=shop\nDB_PASSWORD=hunter2-s3cret-7781\nDB_HOST=db.internal\n' > config/secrets.env
printf '# shop service\n\nRun: python app/main.py\n' > README.md
commit "Document how to run, add the DB host"
git tag -a v1.0 -m "release 1.0"
printf 'def connect(host="db.internal"):\n    return host\n' > app/db.py
commit "Make the DB host configurable"
git rm -q config/secrets.env
printf 'config/secrets.env\n' > .gitignore
commit "Stop tracking secrets.env"
printf 'PORT=8080\nLOG_LEVEL=debug\n' > config/app.env
commit "Debug logging"
