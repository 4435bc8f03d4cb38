"""First-person statements told in the third person, and short titles naming them: plain English rules.

The rule extractor hears "I really prefer window seats on long flights" and stores what a person
would write down: "Alice really prefers window seats on long flights." under "Prefers window
seats". :func:`third_person` puts the speaker in the place of the first "I" or "my" (its verb
agreeing: "I am" → "Alice is", "I don't" → "Alice doesn't", "I try" → "Alice tries") and
singular "they" in the place of any later one; :func:`title` cuts a predicate to the phrase that
names the fact, never ending on a word that wants another after it ("on", "the", "my").

Only general rules of English grammar are used (agreement, irregular past forms, function words),
nothing fitted to a corpus: the same code meets conversations nobody has seen. Quoted text is left
as it was said, and so is anything the rules do not recognise; a word after "I" that might be a
past form as well as a present one ("read", "put") is left unchanged.
"""

from __future__ import annotations

import re

#: Words a phrase does not end on: each wants another after it (a title ending on one was cut mid-phrase).
DANGLING = frozenset(
    "a an the and or but nor so of to in on at for with from by about as into onto than that which who whom "
    "whose my your his her their our its i me we is are was were be been am do does did have has had will "
    "would can could should very really".split()
)
#: Words that are no verb: after "I" (and its adverbs), one of these means no verb of it follows.
_NO_VERB = frozenset(
    "a an the and or but nor so of to in on at for with from by about as into onto than that which who whom "
    "whose my your his her their our its i me we they he she it you this these those there here if when "
    "because then too not".split()
)
_MODALS = frozenset(
    "can can't cannot could couldn't will won't would wouldn't should shouldn't must mustn't might may shall "
    "did didn't was wasn't had hadn't used ought".split()
)
_AGREEMENT = {"am": "is", "have": "has", "haven't": "hasn't", "do": "does", "don't": "doesn't"}
#: Irregular past forms, and verbs whose past is their base form: unchanged after the speaker's name.
_PAST = frozenset(
    "went took saw got made came gave found knew thought told became left felt brought began kept held wrote "
    "stood heard meant met ran paid sat spoke led grew lost fell sent built understood drew broke spent rose "
    "drove bought wore chose caught taught fought ate drank sang swam flew forgot won woke slept sold rode hid "
    "threw shook stole struck froze fed dug bit blew bent dealt fled hung lit sought shot slid spun stuck swore "
    "swept swung tore wept wound said did was were had read put cut set hit let quit cost hurt shut spread "
    "split bet burst cast thrust".split()
)
#: Adverbs that may stand between "I" and its verb ("I really like", "I never eat"); a word in -ly is one too.
_ADVERBS = frozenset(
    "also always never usually often sometimes still just only even already actually definitely totally truly "
    "really much now ever rarely seldom hardly occasionally recently currently finally strongly personally "
    "honestly literally simply especially particularly certainly probably mostly generally normally typically "
    "kinda sorta all both".split()
)
_NOT_ADVERBS = frozenset("fly apply reply rely supply imply multiply ally bully tally".split())
#: Where a title's phrase ends: a conjunction or a relative word opens another clause.
_CLAUSE_WORDS = frozenset(
    "and but or nor because 'cause cause since so when whenever while if that which who whom whose where "
    "though although until unless like especially".split()
)
_PREPOSITIONS = frozenset(
    "on in at for with from to by about into onto during after before over under through across around "
    "near without within between among against toward towards per via".split()
)
_LEADING = frozenset("a an the".split())
#: Words that only strengthen the verb after them: a title starts after them ("really prefers" → "Prefers").
_INTENSIFIERS = frozenset(
    "really much strongly truly absolutely definitely totally honestly personally actually just kinda sorta".split()
)
_PRONOUNS = frozenset("it this that they he she there these those".split())
_COPULAS = frozenset("is are was were".split())
TITLE_WORDS = 7

_TOKEN = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*|['’][A-Za-z]+|\S")
_QUOTE = re.compile(r'("[^"]*"|“[^”]*”)')
_LATER = {
    "i": "they",
    "i'm": "they're",
    "i've": "they've",
    "i'd": "they'd",
    "i'll": "they'll",
    "me": "them",
    "my": "their",
    "mine": "theirs",
    "myself": "themselves",
}
_HAD = frozenset("been had gone done seen got gotten made taken given never already".split())


def possessive(subject: str) -> str:
    """``Alice's``, ``the user's``."""
    return f"{subject}'" if subject.endswith("'") else f"{subject}'s"


def agree(verb: str) -> str:
    """``verb`` as its third person singular present ("prefer" → "prefers", "try" → "tries", "have" → "has").

    A modal, a past form or a word already agreeing is returned unchanged.
    """
    lower = verb.lower().replace("’", "'")
    if lower in _AGREEMENT:
        return _same_case(verb, _AGREEMENT[lower])
    if lower in _MODALS or lower in _PAST or lower.endswith("ed") or not lower.isalpha():
        return verb
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _same_case(model: str, word: str) -> str:
    return word[:1].upper() + word[1:] if model[:1].isupper() else word


def _is_adverb(word: str) -> bool:
    lower = word.lower()
    return lower in _ADVERBS or (lower.endswith("ly") and len(lower) > 4 and lower not in _NOT_ADVERBS)


def third_person(text: str, subject: str) -> str:
    """``text``, said in the first person, told about ``subject`` ("Alice", "the user").

    The first "I" (or "my", "me") becomes ``subject`` (or its possessive), with its verb agreeing;
    later ones become singular "they", "their", "them". Quoted text is kept as said. The result
    starts with a capital letter.
    """
    parts = _QUOTE.split(text)
    named = False
    out = []
    for n, part in enumerate(parts):
        if n % 2:  # a quotation: as said
            out.append(part)
            continue
        tokens = list(_TOKEN.finditer(part))
        pieces: list[str] = []
        last = 0
        skip_to = -1
        for i, match in enumerate(tokens):
            if i <= skip_to:
                continue
            word = match.group()
            lower = word.lower().replace("’", "'")
            pieces.append(part[last : match.start()])
            last = match.end()
            if lower not in _LATER:
                pieces.append(word)
                continue
            if named:
                # "I" is written upper case anywhere: only "My", "Me" say a sentence starts here
                pieces.append(_LATER[lower] if lower.startswith("i") else _same_case(word, _LATER[lower]))
                continue
            named = True
            if lower == "my":
                pieces.append(possessive(subject))
            elif lower in ("me", "myself", "mine"):
                pieces.append(possessive(subject) if lower == "mine" else subject)
            else:  # "I" and its contractions: the subject, and the verb phrase agreeing with it
                replaced, skip_to, last = _subject_verb(lower, subject, tokens, i, part, last)
                pieces.append(replaced)
        pieces.append(part[last:])
        out.append("".join(pieces))
    said = "".join(out).strip()
    return said[:1].upper() + said[1:]


def _subject_verb(
    lower: str, subject: str, tokens: list[re.Match[str]], i: int, part: str, last: int
) -> tuple[str, int, int]:
    """The subject with the verb that follows "I" agreeing; the last token consumed and where it ends."""
    if lower == "i'm":
        return f"{subject} is", i, last
    if lower == "i've":
        return f"{subject} has", i, last
    if lower == "i'll":
        return f"{subject} will", i, last
    if lower == "i'd":
        following = tokens[i + 1].group().lower() if i + 1 < len(tokens) else ""
        return f"{subject} {'had' if following in _HAD else 'would'}", i, last
    # "I" then adverbs then a verb, each separated by a space only (a comma means no verb follows)
    j = i + 1
    end = last
    words = [subject]
    while j < len(tokens) and part[end : tokens[j].start()] == " " and tokens[j].group()[:1].isalpha():
        word = tokens[j].group()
        if _is_adverb(word) and word.lower() not in _MODALS:
            words.append(word)
            end = tokens[j].end()
            j += 1
            continue
        if word.lower() in _NO_VERB or word.lower().replace("’", "'") in _LATER:
            break
        words.append(agree(word))
        return " ".join(words), j, tokens[j].end()
    return subject, i, last


_EMPTY = DANGLING | _NO_VERB | frozenset("them so much lot lots one ones too very well".split())


def says_something(phrase: str) -> bool:
    """False when ``phrase`` is only pronouns and function words ("it", "so much"): "I love it" names nothing."""
    return any(w.strip('.,;:!?"“”()').lower() not in _EMPTY for w in phrase.split() if w.strip('.,;:!?"“”()'))


def dangles(phrase: str) -> bool:
    """True when ``phrase`` ends on a word that wants another after it ("I take the 7:40 train on").

    A copula after a pronoun ends a clause ("how simple it is") and does not dangle.
    """
    words = [w.strip('.,;:!?"“”()').lower() for w in phrase.split()]
    words = [w for w in words if w]
    if not words:
        return True
    if words[-1] in _COPULAS and len(words) > 1 and words[-2] in _PRONOUNS:
        return False
    return words[-1] in DANGLING


def title(predicate: str, *, cut_at_prepositions: bool = True) -> str:
    """A short title naming the fact a predicate states ("prefers window seats on …" → "Prefers window seats").

    The phrase ends before punctuation or a word opening another clause ("and", "because",
    "which"), and, with ``cut_at_prepositions``, before a preposition that follows a noun (not a
    verb: "loves being around friends" keeps its "around"); at most :data:`TITLE_WORDS` words, an
    article or an intensifier ("really") dropped from its start, and never ending on a word that
    wants another after it (:func:`dangles`). "" when nothing is left.
    """
    phrase = _phrase(predicate, cut_at_prepositions=cut_at_prepositions, clauses=True)
    if cut_at_prepositions and len(phrase.split()) < 2:  # a verb alone ("loves when you cook"): the clause is the fact
        phrase = _phrase(predicate, cut_at_prepositions=cut_at_prepositions, clauses=False) or phrase
    return phrase[:1].upper() + phrase[1:]


def _phrase(predicate: str, *, cut_at_prepositions: bool, clauses: bool) -> str:
    words: list[str] = []
    for raw in predicate.split():
        lower = raw.lower().strip('.,;:!?"“”()')
        if raw in ("-", "–", "—") or not lower or (clauses and words and lower in _CLAUSE_WORDS):
            break
        if cut_at_prepositions and lower in _PREPOSITIONS and _after_a_noun(words):
            break
        if not words and (lower in _LEADING or lower in _INTENSIFIERS):
            continue
        words.append(raw.rstrip(',;:!?."”)'))
        if raw[-1:] in ",;:!?" or raw.endswith((".", '"', "”", ")")):
            break
    if len(words) > TITLE_WORDS:  # cut short: end before the last preposition, not inside its phrase
        words = words[:TITLE_WORDS]
        inner = [i for i, w in enumerate(words) if i >= 2 and w.lower() in _PREPOSITIONS]
        words = words[: inner[-1]] if inner else words
    while words and dangles(" ".join(words)):
        words.pop()
    return " ".join(words)


def _after_a_noun(words: list[str]) -> bool:
    """Whether a title so far ends on a noun, so that a preposition after it starts another phrase.

    Its verb (the first word after any adverbs), a form in -ing or -ed, a modal or a word after "to"
    keep the preposition that follows ("loves being around friends", "prefers to travel by train").
    """
    verb = next((i for i, w in enumerate(words) if not _is_adverb(w)), len(words))
    if len(words) < 2 or verb >= len(words) - 1:
        return False
    last = words[-1].lower()
    return not (last.endswith(("ing", "ed")) or words[-2].lower() == "to" or last in _MODALS)


_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|[。！？；;]")
_ABBREVIATION = re.compile(r"(?:^|\s)(?:[A-Z][a-z]{0,2}|[a-z](?:\.[a-z])+)$")  # Dr. Mr. St. e.g. before the stop
_SPACELESS = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u0e00-\u0e7f]")
HEADLINE_CHARS = 60  # a title made from a text's first sentence
SPACELESS_CHARS = 20  # ... in a script written without spaces (Chinese, Japanese, Thai)


def headline(text: str) -> str:
    """A readable title from a text's first sentence, in any script ("" when it has no words).

    A heading's marks and a final stop are dropped; a long sentence is cut at a word (at
    :data:`HEADLINE_CHARS`, or :data:`SPACELESS_CHARS` characters in a script written without
    spaces) and marked with "…".
    """
    for line in text.splitlines():
        line = line.strip().lstrip("#>*-+ \t").strip()
        if not line or line == "---":
            continue
        sentence = _first_sentence(line).strip().rstrip(".!?。！？;；:,，、")
        if not sentence:
            continue
        limit = SPACELESS_CHARS if _SPACELESS.search(sentence) and " " not in sentence else HEADLINE_CHARS
        if len(sentence) <= limit:
            return sentence
        cut = sentence[:limit].rsplit(" ", 1)[0] if " " in sentence[:limit] else sentence[:limit]
        return cut.rstrip(",;:，、 ") + "…"
    return ""


def _first_sentence(line: str) -> str:
    for stop in _SENTENCE_END.finditer(line):
        if not _ABBREVIATION.search(line[: stop.start()]):
            return line[: stop.start()]
    return line
