"""What a user points `report`, `compare` and `analyze phases` at: a results
directory of `benchfs run`, a directory of them (a sweep), a directory of
IOR, mdtest or fio outputs, or one such file. Above ``analysis.convert``,
which turns tool outputs into phase rows, and ``analysis.loaders``, which
parses each file."""
