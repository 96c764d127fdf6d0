"""`mpijob dashboard [--print-url]`: open the local cluster's dashboard, logged in as the kubeconfig's user.

The server makes a one-time login ticket for whoever asks (with the kubeconfig's credentials); the link
carries it in its fragment, which the browser never sends to a server nor keeps once the page traded it
for a session cookie (docs/dashboard.md)."""

from __future__ import annotations

import webbrowser
from typing import Annotated

import typer

from mpijob.cli import output
from mpijob.cli.session import ContextOpt, KubeconfigOpt, connect, handles_errors


@handles_errors
def dashboard(
    ctx: typer.Context,
    print_url: Annotated[bool, typer.Option("--print-url",
                                            help="Print the login link instead of opening a browser.")] = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Open the dashboard in a browser, logged in as the current kubeconfig's user.

    The link logs in once, within a minute; the session then lasts until you log out, for 8 hours
    without use, or a day at most. The browser must trust the cluster's CA ($MPIJOB_HOME/ca.crt) or be
    told to accept its certificate."""
    from mpijob.client.core import login_ticket

    with connect(ctx, kubeconfig, context, None) as conn:
        ticket = conn.run(login_ticket())
    url = conn.url.rstrip("/") + str(ticket["path"])
    if print_url:
        print(url)
        return
    if not webbrowser.open(url):
        output.info(f"no browser found here: open this link within {ticket.get('expiresInSeconds')}s (it works once)")
        print(url)
