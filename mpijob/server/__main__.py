"""`python -m mpijob.server`: run the server for `$MPIJOB_HOME` in the foreground."""

from mpijob.server.daemon import run
from mpijob.store.home import Home

if __name__ == "__main__":
    run(Home.default().ensure())
