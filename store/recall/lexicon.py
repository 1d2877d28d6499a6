"""A small lexicon of coding synonyms and abbreviations, for matching words that mean the same. Pure data.

Each line is one group of words that name the same thing in bug reports and fixes; the first word is
the group's name. ``store.recall.tokenize.match_form`` stems every word (Porter2) and then maps a stem
found in a group to the group's stem, so ``segfaults``, ``panicked`` and ``crash`` compare equal, and so do
``cfg`` and ``configuration``. It applies to index keywords and queries alike (matching is symmetric),
at match time only: the on-disk index keeps the plain tokens.

How the groups were chosen (docs/decisions/0005-recall-evaluation.md): general vocabulary of software bug
reports — symptoms (crash, hang, slow, leak, flaky), HTTP statuses and their names, everyday
abbreviations in code (``ctx``, ``cfg``, ``msg``, ``err``), and UI / i18n words — not the words of any
one evaluation query. A word with a second common meaning in code is left out: ``double`` (a float
type, not "twice"), ``abort`` (a crash in C, a cancellation in JavaScript), ``terminate`` (C++'s crash
message), ``frozen`` (Python's frozen dataclasses), ``map``, ``spec``, ``build``, ``job`` / ``task``. So
is a word whose *stem* is another common word: ``settings`` (stem ``set``), ``paging`` (``page``),
``locale`` (``local``), ``segmentation`` (``segment``), ``authorization`` (``author``),
``documentation`` (``document``), ``requirement`` (``requir``, as in "required"). Inflected forms need
not be listed (the stemmer folds them); irregular ones (``hung``, ``lost``, ``panicked``) are.
"""

from __future__ import annotations

LEXICON_TEXT = """
    crash panic panicked panicking segfault sigsegv
    hang hung stuck freeze unresponsive
    forever infinite infinitely indefinitely endless endlessly
    slow slowly slowness sluggish latency lag laggy
    leak leaking leaked
    retry retried reattempt
    throttle throttled throttling ratelimit ratelimited 429
    unauthorized unauthenticated 401
    forbidden 403
    unavailable 503
    cancel cancelled canceled cancellation
    duplicate duplicated twice dupe
    lost lose loses losing loss
    empty blank
    null none nil nullptr nonetype
    config configuration cfg conf
    env environment
    auth authentication authenticate authn
    login signin logon
    logout signout logoff
    permission authz
    db database
    repo repository
    dependency dep deps
    directory dir folder
    doc docs
    function func fn
    argument arg args param parameter
    variable var vars
    message msg
    request req
    response resp
    connection conn
    timezone tz utc gmt tzinfo
    i18n l10n translation internationalization
    newline linefeed eol crlf
    delete remove erase
    shutdown sigterm sigint
    kill killed sigkill oomkilled
    cache memoize memoized
    flaky flake flakey intermittent intermittently sporadic sporadically nondeterministic
    encoding charset codec unicode utf8
    wrong incorrect erroneous
    show shown display
    email mail
    image img picture
    button btn
    pagination paginate paginated
    stale outdated obsolete
    refresh reload
    save persist
    password passwd passphrase
    upgrade bump
    error err
    int integer
    str string
    bool boolean
    dict dictionary
    max maximum
    min minimum
    len length
    idx index indices
    pkg package
    lib library
    util utils utility
    impl implementation
    init initialize initialise initialization initialisation
    exec execute
    cmd command
    proc process
    tmp temp temporary
    addr address
    ctx context
    ptr pointer
    ref reference
    obj object
    val value
    mem memory
    alloc allocate allocation
    sync synchronize synchronise
    async asynchronous
"""


def groups() -> list[list[str]]:
    """The lexicon's groups, each a list of words, the group's name first."""
    return [line.split() for line in LEXICON_TEXT.strip().splitlines()]
