"""A small DOM of an HTML page for the pictures tests: start tags with ids, classes, ancestors."""

from __future__ import annotations

from html.parser import HTMLParser


class Element:
    """One start tag of the page."""

    def __init__(self, tag: str, attrs: list[tuple[str, str | None]], parents: list[Element]):
        self.tag = tag
        self.attrs = {key: value or "" for key, value in attrs}
        self.classes = set(self.attrs.get("class", "").split())
        self.parents = list(parents)

    def inside(self, element_id: str) -> bool:
        return any(parent.attrs.get("id") == element_id for parent in self.parents)


class _Collector(HTMLParser):
    _VOID = frozenset({"meta", "br", "img", "link", "input", "hr"})

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[Element] = []
        self.stack: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, attrs, self.stack)
        self.elements.append(element)
        if tag not in self._VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append(Element(tag, attrs, self.stack))

    def handle_endtag(self, tag: str) -> None:
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index].tag == tag:
                del self.stack[index:]
                break


def parse_page(text: str) -> list[Element]:
    """Every start tag of ``text`` with its ancestors."""
    collector = _Collector()
    collector.feed(text)
    collector.close()
    return collector.elements


def by_id(elements: list[Element], element_id: str) -> Element:
    found = [e for e in elements if e.attrs.get("id") == element_id]
    assert len(found) == 1, f"expected one element #{element_id}, found {len(found)}"
    return found[0]


def with_class(elements: list[Element], *classes: str) -> list[Element]:
    return [e for e in elements if set(classes) <= e.classes]
