#!/usr/bin/env python3
"""Every relative link in the project's Markdown pages leads somewhere (ctest docs.links).

   check_links.py ROOT

Reads README.md, docs/**/*.md and the README.md files under editors/, examples/, tests/ and
tools/ (node_modules left out). A link `[text](path)` that is not a URL must name an existing
file or folder, relative to the page; a link with `#anchor` into a Markdown page (or `#anchor`
alone, into the same page) must name one of that page's headings, as GitHub spells its anchors.
Links inside code (fenced blocks, `spans`) are text, not links. Before the tree it checks
itself on a small tree with one broken link of each kind, so that it cannot pass by finding
nothing. Exits 1 naming every broken link as FILE:LINE: target (why)."""
import os
import re
import sys
import tempfile

LINK = re.compile(r'!?\[[^\]]*\]\(([^()\s]+)(?:\s+"[^"]*")?\)')
FENCE = re.compile(r'^\s*(```|~~~)')
CODE_SPAN = re.compile(r'(`+)(?:.+?)\1')


def pages(root):
    """The Markdown pages the check reads, relative to root."""
    found = ['README.md'] if os.path.isfile(os.path.join(root, 'README.md')) else []
    for top, only_readme in (('docs', False), ('editors', True), ('examples', True), ('tests', True), ('tools', True)):
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if d != 'node_modules' and not d.startswith('.'))
            for name in sorted(files):
                if name == 'README.md' or (not only_readme and name.endswith('.md')):
                    found.append(os.path.relpath(os.path.join(folder, name), root))
    return found


def prose_lines(text):
    """(line number, line with code spans blanked) for every line outside fenced code."""
    fenced = False
    for number, line in enumerate(text.split('\n'), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, CODE_SPAN.sub('', line)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = CODE_SPAN.sub(lambda m: m.group(0).strip('`'), heading.strip()).lower()
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)
    return re.sub(r'[^\w\- ]', '', text).replace(' ', '-')


def anchors(path, cache={}):
    """Every heading anchor of a Markdown page (repeated headings get -1, -2, ... as on GitHub)."""
    if path not in cache:
        seen, result = {}, set()
        fenced = False
        with open(path, encoding='utf-8') as f:
            for line in f:
                if FENCE.match(line):
                    fenced = not fenced
                    continue
                m = None if fenced else re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
                if m:
                    base = slug(m.group(1))
                    n = seen.get(base, 0)
                    seen[base] = n + 1
                    result.add(base if n == 0 else f'{base}-{n}')
        cache[path] = result
    return cache[path]


def broken_links(root, page, counted=None):
    """'PAGE:LINE: target (why)' for each broken relative link of one page; counted[0] grows by
    the number of relative links read."""
    full = os.path.join(root, page)
    with open(full, encoding='utf-8') as f:
        text = f.read()
    problems = []
    for number, line in prose_lines(text):
        for target in LINK.findall(line):
            if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I):  # http:, https:, mailto:, ...
                continue
            if counted is not None:
                counted[0] += 1
            path, _, anchor = target.partition('#')
            resolved = os.path.normpath(os.path.join(os.path.dirname(full), path)) if path else full
            if not os.path.exists(resolved):
                problems.append(f'{page}:{number}: {target} (no such file)')
            elif anchor and resolved.endswith('.md') and anchor not in anchors(resolved):
                problems.append(f'{page}:{number}: {target} (no heading #{anchor} in {os.path.relpath(resolved, root)})')
    return problems


def self_test():
    """The check finds a missing file and a missing heading, and passes good links and code."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, 'docs'))
        with open(os.path.join(root, 'docs', 'a.md'), 'w') as f:
            f.write('# A page\n\n## The `kblaster eval` command\n')
        with open(os.path.join(root, 'README.md'), 'w') as f:
            f.write('[ok](docs/a.md) [ok](docs/a.md#the-kblaster-eval-command) [ok](https://example.org)\n'
                    '`[code](nowhere.md)`\n```\n[fenced](nowhere.md)\n```\n'
                    '[gone](docs/gone.md)\n[bad anchor](docs/a.md#no-such-heading)\n[self](#a-page)\n')
        found = [p for page in pages(root) for p in broken_links(root, page)]
        expected = ['README.md:6: docs/gone.md (no such file)',
                    'README.md:7: docs/a.md#no-such-heading (no heading #no-such-heading in docs/a.md)',
                    'README.md:8: #a-page (no heading #a-page in README.md)']
        if found != expected:
            print('FAIL the check itself: expected', expected, 'found', found)
            return False
    print('ok   the check finds a missing file and a missing heading, and passes the rest')
    return True


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..'))
    if not self_test():
        return 1
    checked = pages(root)
    links = [0]
    problems = [p for page in checked for p in broken_links(root, page, links)]
    for p in problems:
        print('FAIL', p)
    print(f'{"ok  " if not problems else "FAIL"} {len(checked)} pages, {links[0]} relative links, {len(problems)} broken')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
