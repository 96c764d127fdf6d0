"""`mpijob user add|list|remove`: the cluster's users (admin only), through mpijob's users API.

`add` prints the new user's kubeconfig path as the last line of its output: written to `--output`, else
`$MPIJOB_HOME/users/NAME.kubeconfig` for the local cluster, else `./NAME.kubeconfig`, mode 0600. What
the user may do is RBAC's: bind a role to them (`kubectl create rolebinding ... --user NAME`).
"""

from pathlib import Path
from typing import Annotated

import typer

from mpijob.cli import output
from mpijob.cli.session import ContextOpt, KubeconfigOpt, connect, handles_errors

user_app = typer.Typer(help="Manage the cluster's users and their tokens (admin only).", no_args_is_help=True,
                       rich_markup_mode=None)

GroupOpt = Annotated[list[str] | None, typer.Option("--group", "-g", help="A group of the user (repeatable).",
                                                       show_default=False)]


def _default_path(local: bool, name: str) -> Path:
    if local:
        from mpijob.store.home import Home

        return Home.default().root / "users" / f"{name}.kubeconfig"
    return Path.cwd() / f"{name}.kubeconfig"


@user_app.command("add")
@handles_errors
def add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The user's name (lower-case letters, digits, '-', '.').")],
    group: GroupOpt = None,
    output_path: Annotated[str | None, typer.Option("--output", "-o", help="Where to write the user's "
                                                       "kubeconfig.", show_default=False)] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="The namespace of the user's "
                                                     "context (default: default).", show_default=False)] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Create a user with a new token and write a kubeconfig for them (the token is shown nowhere else)."""
    from mpijob.client import users

    with connect(ctx, kubeconfig, context, None) as conn:
        created = conn.run(users.add_user(name, list(group or [])))
        choice, creds = conn.choice, conn.creds
    token = str((created.get("status") or {}).get("token") or "")
    cluster = str((choice.config.context(choice.context)[1] if choice.config else {}).get("cluster") or "cluster")
    path = Path(output_path).expanduser() if output_path else _default_path(choice.local, name)
    users.write_private(path, users.user_kubeconfig(creds, cluster, name, token, namespace or "default"))
    groups = ", ".join(created.get("spec", {}).get("groups") or []) or "none"
    print(f"user/{name} created (groups: {groups})")
    print(path.resolve())


@user_app.command("list")
@handles_errors
def list_(
    ctx: typer.Context,
    out: Annotated[str | None, typer.Option("--output", "-o", help="json or yaml.", show_default=False)] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """List the users and their groups."""
    from mpijob.client import users

    if out:
        output.check_format(out, ("json", "yaml"), "user list")
    with connect(ctx, kubeconfig, context, None) as conn:
        items = conn.run(users.list_users())
    if out:
        output.dump(output.as_list(items), out)
        return
    output.table(["NAME", "GROUPS"], [[u["metadata"]["name"], ",".join(u.get("spec", {}).get("groups") or [])
                                       or "<none>"] for u in items])


@user_app.command("remove")
@handles_errors
def remove(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The user to remove; their tokens stop working at once.")],
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Remove a user: every request with their token is refused from now on (401)."""
    from mpijob.client import users

    with connect(ctx, kubeconfig, context, None) as conn:
        conn.run(users.remove_user(name))
    print(f"user/{name} removed")
