"""Seeded text for both generators: a vocabulary, line pools built once, slices of them.

Speed matters more than prose quality: a full-scale tree is ~1 GB, so texts are slices of
pools of prose, code and shell lines built once per seed, drawn by each unit's own RNG.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

#: The agent model both layouts' runs name.
AGENT_MODEL = "claude-sonnet-4-5-20250929"
TOOLS = ("Bash", "Bash", "Bash", "Read", "Read", "Edit", "Grep", "Glob", "Write")
#: Vocabulary of the prose pool (one string keeps the list short to read).
VOCABULARY = (
    "the agent branch worktree test suite failing passes commit diff file module function "
    "config migration fixture review change plan step verify evidence output error stack "
    "trace handler request response cache retry timeout queue worker schema index query "
    "transaction rollback status clean dirty staged untracked merge rebase checkout main "
    "feature pagination users endpoint service client server build lint format check"
)
WORDS = tuple(VOCABULARY.split())
IDENTS = (
    "users",
    "paginate",
    "page_size",
    "cursor",
    "session",
    "repo",
    "worktree_path",
    "branch_name",
    "run_tests",
    "result",
    "payload",
    "handler",
    "config",
    "retries",
    "timeout",
)


@dataclass
class Pools:
    """Line pools texts are sliced from: prose for messages, code and shell output for tools."""

    prose: list[str]
    code: list[str]
    shell: list[str]
    paths: list[str]


def build_pools(seed: int) -> Pools:
    """The pools for `seed`: the same lines whichever process builds them."""
    rng = random.Random(f"pools/{seed}")

    def sentence() -> str:
        words = rng.choices(WORDS, k=rng.randint(8, 22))
        words[0] = words[0].capitalize()
        if rng.random() < 0.3:
            words.insert(rng.randint(1, len(words) - 1), f"`{rng.choice(IDENTS)}`")
        return " ".join(words) + rng.choice((".", ".", ".", ":", "?"))

    def code_line() -> str:
        indent = " " * (4 * rng.randint(0, 3))
        a, b, c = rng.sample(IDENTS, 3)
        template = rng.choice(
            (
                "def {a}({b}, {c}=None):",
                "{a} = {b}.get({c!r}, {n})",
                "if {a} is None or {b} > {n}:",
                "return [{a} for {a} in {b} if {a}.{c}]",
                "assert {a}({b}) == {n}, {c!r}",
                "for {a} in {b}[{n}:]:",
                "raise ValueError(f'{a} must be positive, got {{{b}}}')",
                "# {a}: keep {b} in sync with {c}",
                "{a}.{b}({c}, limit={n})",
            )
        )
        return indent + template.format(a=a, b=b, c=c, n=rng.randint(0, 500))

    def shell_line() -> str:
        return rng.choice(
            (
                lambda: f"On branch feature/{rng.choice(IDENTS)}-{rng.randint(1, 99)}",
                lambda: f"\tmodified:   src/{rng.choice(IDENTS)}/{rng.choice(IDENTS)}.py",
                lambda: f"?? tests/test_{rng.choice(IDENTS)}.py",
                lambda: (
                    f"tests/test_{rng.choice(IDENTS)}.py::test_{rng.choice(IDENTS)}_"
                    f"{rng.choice(IDENTS)} {rng.choice(('PASSED', 'PASSED', 'FAILED'))}"
                    f" [{rng.randint(1, 100):3d}%]"
                ),
                lambda: (
                    f"-rw-r--r--  1 agent staff {rng.randint(80, 90000):6d} Jan "
                    f"{rng.randint(1, 28):2d} 10:{rng.randint(0, 59):02d} "
                    f"{rng.choice(IDENTS)}.py"
                ),
                lambda: (
                    f"{rng.randbytes(4).hex()[:7]} {rng.choice(('fix', 'add', 'refactor'))}: "
                    f"{' '.join(rng.choices(WORDS, k=5))}"
                ),
                lambda: (
                    f"Preparing worktree (new branch 'feature/{rng.choice(IDENTS)}') "
                    f"HEAD is now at {rng.randbytes(4).hex()[:7]}"
                ),
                lambda: (
                    f"E       AssertionError: assert {rng.randint(0, 50)} == {rng.randint(0, 50)}"
                ),
            )
        )()

    return Pools(
        prose=[sentence() for _ in range(6000)],
        code=[code_line() for _ in range(4000)],
        shell=[shell_line() for _ in range(4000)],
        paths=[
            f"src/{rng.choice(IDENTS)}/{rng.choice(IDENTS)}_{rng.randint(1, 40)}.py"
            for _ in range(400)
        ],
    )


class Texts:
    """Random slices of the pools, drawn from one iteration's RNG."""

    def __init__(self, pools: Pools, rng: random.Random):
        self.pools = pools
        self.rng = rng

    def _lines(self, pool: list[str], min_chars: int, max_chars: int, sep: str) -> str:
        target = self.rng.randint(min_chars, max_chars)
        start = self.rng.randrange(len(pool))
        out: list[str] = []
        size = 0
        i = start
        while size < target:
            line = pool[i % len(pool)]
            out.append(line)
            size += len(line) + 1
            i += 1
        return sep.join(out)[:max_chars]

    def prose(self, min_chars: int, max_chars: int) -> str:
        return self._lines(self.pools.prose, min_chars, max_chars, " ")

    def code(self, min_chars: int, max_chars: int) -> str:
        return self._lines(self.pools.code, min_chars, max_chars, "\n")

    def shell(self, min_chars: int, max_chars: int) -> str:
        return self._lines(self.pools.shell, min_chars, max_chars, "\n")

    def path(self) -> str:
        return self.rng.choice(self.pools.paths)
