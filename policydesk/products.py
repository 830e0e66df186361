"""Products (lines of business): which exist, checking the one asked for, and variants in context.

The product is chosen by the asker and never inferred by a model (a wrong guess would show one
product's rules for another). With one chosen it
travels inside the `Clearance` into every scoped read (`storage/predicate.py`), so only sources
for that product or for every product are retrieved, version-resolved and shown.

Which product names are valid is data: the ones the corpus's sources name (read under the
caller's clearance, so a product named only by a source the caller may not read is not
revealed). Nothing here lists products.

Without a product, a rule may have product variants: policies sharing a title, each for other
products (one edition per line of business). If the top-ranked policy in context is such a
variant and another edition is in context too, the pipeline abstains and asks for the product;
if the answer cites a product-specific source, it says which products it applies to. Either
way a warning of kind `line_of_business`: never a silent pick.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from policydesk.contract.answer import AnswerWarning, Citation
from policydesk.storage.storable import echoable
from policydesk.storage import sources
from policydesk.storage.clearance import NO_SOURCES, Clearance
from policydesk.storage.models import ProductChoice
from policydesk.storage.scope import scoped_session


class UnknownLineOfBusiness(ValueError):
    """A product name no source the caller may read names.

    The message is stored (trace, disputes, export), so it repeats the name only when it reads
    like a product name (`policydesk.storage.storable.echoable`)."""

    code = "unknown_line_of_business"
    field = "line_of_business"

    def __init__(self, name: str, valid: list[str]) -> None:
        listed = ", ".join(valid) if valid else "none: no source names a line of business"
        super().__init__(f"unknown line of business{_echo(name)}; valid: {listed}")
        self.name, self.valid = name, valid


def _echo(name: str) -> str:
    return f" {name!r}" if echoable(name) else ""


def product_label(name: str) -> str:
    """`medicare_advantage` -> `Medicare Advantage` (display only)."""
    return name.replace("_", " ").title()


def products_text(names) -> str:
    return ", ".join(product_label(n) for n in names) if names else "every product"


def valid_products(db, clearance: Clearance) -> list[str]:
    with scoped_session(db.app, clearance.for_product(None)) as session:
        return sources.product_names(session, clearance=clearance)


def normalized(name: str | None) -> str | None:
    """The asked-for product as entered ("" and blanks = none chosen)."""
    if name is None:
        return None
    name = str(name).strip()
    return name or None


def checked_product(db, clearance: Clearance, name: str | None) -> str | None:
    """The product to apply, or None; an unknown name raises `UnknownLineOfBusiness`."""
    name = normalized(name)
    if name is None:
        return None
    valid = valid_products(db, clearance)
    if name not in valid:
        raise UnknownLineOfBusiness(name, valid)
    return name


def _products_of(node) -> tuple[str, ...]:
    return tuple(node.metadata.get("line_of_business") or ())


@dataclass(frozen=True)
class Variants:
    title: str
    editions: dict[tuple[str, ...], str]  # products -> doc id, in rank order

    def warning(self) -> AnswerWarning:
        listed = "; ".join(f"{products_text(p)}: {doc}" for p, doc in self.editions.items())
        return AnswerWarning(kind="line_of_business", message=(
            f"{self.title} differs by line of business ({listed}). Choose the member's product and ask "
            "again; PolicyDesk does not pick one."))


def variants_in_context(nodes) -> Variants | None:
    """Product editions of the top-ranked policy's rule in context, if there are two or more."""
    policies = [n.node for n in nodes if n.node.metadata.get("source_type") == "policy"]
    if not policies or not _products_of(policies[0]):
        return None
    title = str(policies[0].metadata.get("title", "")).strip().casefold()
    editions: dict[tuple[str, ...], str] = {}
    for node in policies:
        products = _products_of(node)
        if products and str(node.metadata.get("title", "")).strip().casefold() == title:
            editions.setdefault(products, node.metadata.get("doc_id") or node.ref_doc_id)
    if len(editions) < 2:
        return None
    return Variants(title=str(policies[0].metadata.get("title")), editions=editions)


def cited_product_warning(citations: list[Citation]) -> AnswerWarning | None:
    """Without a product chosen: say which products a product-specific cited source applies to."""
    specific = {c.doc_id: c.line_of_business for c in citations if c.line_of_business}
    if not specific:
        return None
    listed = "; ".join(f"{doc} applies to {products_text(p)} only" for doc, p in specific.items())
    return AnswerWarning(kind="line_of_business", message=(
        f"No line of business was chosen, and the answer depends on it: {listed}. Check the member's product."))


# -- the product a user last chose on the ask page (migration 0014) -----------------------------

def remembered_product(session: Session, *, user_name: str) -> str | None:
    """The user's last choice (the session must be scoped to that user: RLS shows only their rows)."""
    return session.scalar(select(ProductChoice.line_of_business).where(ProductChoice.user_name == user_name)
                          .order_by(ProductChoice.id.desc()).limit(1))


def remember_product(db, *, user_name: str, line_of_business: str | None) -> None:
    """Append the choice when it differs from the last one (append-only: the latest row wins)."""
    with scoped_session(db.app, NO_SOURCES, user_name=user_name) as session, session.begin():
        if remembered_product(session, user_name=user_name) == line_of_business:
            return
        exists = session.scalar(select(ProductChoice.id).where(ProductChoice.user_name == user_name).limit(1))
        if exists is None and line_of_business is None:
            return
        session.execute(insert(ProductChoice).values(user_name=user_name, line_of_business=line_of_business))
