#!/usr/bin/env python3
"""Generate the toy corpora under data/ and data/README.md.

    python3 scripts/make_data.py            # writes data/, then checks what it wrote
    python3 scripts/make_data.py --check    # only checks: regenerates in memory, compares with disk

Python 3 standard library only. Deterministic: every corpus has its own fixed seed (SEEDS),
every random draw goes through one random.Random(seed), and nothing depends on set or dict
hash order, so two runs (with any PYTHONHASHSEED, on any Python 3.8+) give byte-identical files.

Corpora (formats are a contract with the C loader; UTF-8, one sentence per line, '\\n' ends,
words separated by one ASCII space):
    data/flies          tag       "w1 ... wn<TAB>t1 ... tn"   POS tags; flies (N/V) and like (P/V)
    data/bank           tag       "w1 ... wn<TAB>t1 ... tn"   RIVER/MONEY on bank, O elsewhere
    data/bank_classify  classify  "LABEL<TAB>w1 ... wn"       RIVER/MONEY per sentence
    data/reverse        tag       "w1 ... wn<TAB>t1 ... tn"   t_i = w_{n-1-i}, symbols a..p
    data/lm             lm / mlm  "w1 ... wn"                 Korean and English sentences
"""

import hashlib
import os
import random
import re
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data")

SEEDS = {"flies": 1001, "bank": 2002, "bank_classify": 3003, "reverse": 4004, "lm": 5005}
SIZES = {  # (train lines, valid lines)
    "flies": (4000, 600),
    "bank": (4000, 600),
    "bank_classify": (3000, 500),
    "reverse": (6000, 600),
    "lm": (4000, 500),
}
MAX_WORDS = {"flies": 16, "bank": 16, "bank_classify": 16, "reverse": 12, "lm": 10}
MIN_WORDS = {"flies": 2, "bank": 3, "bank_classify": 3, "reverse": 4, "lm": 3}
TASK = {"flies": "tag", "bank": "tag", "bank_classify": "classify", "reverse": "tag", "lm": "lm"}

FLIES_TAGS = ["N", "V", "P", "D", "ADJ", "ADV", "PRON", "CONJ"]
FLIES_AMBIGUOUS = ["flies", "like"]
FLIES_PROBES = ["time flies like an arrow", "fruit flies like a banana"]
BANK_TAGS = ["O", "RIVER", "MONEY"]
BANK_LABELS = ["RIVER", "MONEY"]
REVERSE_SYMBOLS = [chr(ord("a") + i) for i in range(16)]


# ----------------------------------------------------------------------------------------------
# small helpers

def pick(rng, seq):
    return seq[rng.randrange(len(seq))]


def wpick(rng, pairs):
    """pairs: [(weight, value)]; weighted choice with rng.random() (stable across versions)."""
    total = sum(w for w, _ in pairs)
    x = rng.random() * total
    for w, v in pairs:
        x -= w
        if x < 0:
            return v
    return pairs[-1][1]


def maybe(rng, p):
    return rng.random() < p


AN_WORDS = {"hour", "honest", "heir"}
A_WORDS = {"one", "university", "unicorn", "useful", "european", "user"}


def article(next_word):
    if next_word in AN_WORDS:
        return "an"
    if next_word in A_WORDS:
        return "a"
    return "an" if next_word[0] in "aeiou" else "a"


def P(s):
    """'the/D day/N' -> [('the','D'), ('day','N')]; '' -> []."""
    out = []
    for tok in s.split():
        w, t = tok.rsplit("/", 1)
        out.append((w, t))
    return out


def fix_articles(pairs):
    """Replace the placeholder word 'a' by 'a' or 'an' according to the next word."""
    out = list(pairs)
    for i, (w, t) in enumerate(out):
        if w in ("a", "an") and i + 1 < len(out):
            out[i] = (article(out[i + 1][0]), t)
    return out


def draw_split(rng, gen, n_train, n_valid, seen, held=None, n_valid_held=0, forced_valid=(),
               vocab_of=None):
    """Draw unique items from gen(rng) -> (text, item, key) into a train and a valid list.

    seen: dict text -> item shared across calls (a text drawn twice must give the same item:
    this is where 'the same sentence always gets the same tags' is enforced). held(key) true:
    the item may go to valid only (an unseen combination); n_valid_held of valid are such items,
    the rest of valid are ordinary draws whose text is not in train. Valid items are drawn once
    train is full, and (with vocab_of) only if all their words occur in train."""
    train, valid_h, valid_r = [], [], []
    train_vocab = set()
    for text, item in forced_valid:
        assert text not in seen, text
        seen[text] = item
        valid_h.append(item)
    n_valid_reg = n_valid - n_valid_held
    tries = 0
    limit = 400 * (n_train + n_valid) + 10000
    while len(train) < n_train or len(valid_h) < n_valid_held or len(valid_r) < n_valid_reg:
        tries += 1
        if tries > limit:
            raise RuntimeError("generator ran out of unique sentences: %d/%d train, %d/%d held, %d/%d valid"
                               % (len(train), n_train, len(valid_h), n_valid_held, len(valid_r), n_valid_reg))
        text, item, key = gen(rng)
        if text in seen:
            assert seen[text] == item, ("same sentence, different annotation", text, seen[text], item)
            continue
        is_held = held is not None and held(key)
        if len(train) < n_train:
            if not is_held:
                seen[text] = item
                train.append(item)
                if vocab_of:
                    train_vocab.update(vocab_of(item))
            continue
        if vocab_of and not set(vocab_of(item)) <= train_vocab:
            continue
        if is_held:
            if len(valid_h) < n_valid_held:
                seen[text] = item
                valid_h.append(item)
        elif len(valid_r) < n_valid_reg:
            seen[text] = item
            valid_r.append(item)
    return train, valid_h + valid_r


def hold_out(rng, keys, frac, forced=()):
    keys = sorted(set(keys))
    k = max(1, int(round(frac * len(keys))))
    held = set(rng.sample(keys, k))
    held.update(forced)
    return held


# ----------------------------------------------------------------------------------------------
# 1. flies: part-of-speech tagging where `flies` (N/V) and `like` (P/V) need context

TIME_SUBJ = [P(s) for s in [
    "time/N", "life/N", "youth/N", "summer/N", "winter/N", "spring/N", "autumn/N", "love/N",
    "money/N", "childhood/N", "fame/N", "happiness/N", "the/D day/N", "the/D night/N",
    "the/D week/N", "the/D year/N", "the/D morning/N", "the/D evening/N", "the/D weekend/N",
    "the/D holiday/N", "an/D hour/N", "a/D day/N", "a/D moment/N", "my/D youth/N",
    "our/D summer/N", "the/D season/N", "the/D vacation/N", "a/D lifetime/N"]]
INSECTS = ["fruit", "house", "sand", "horse", "black", "crane", "stable", "fire", "deer", "bottle",
           "drain", "dragon", "robber", "flower", "cluster", "dung", "vinegar", "moth", "stone",
           "hover", "snake", "soldier", "flesh", "march"]
INSECT_DET = ["", "", "", "the", "the", "these", "some", "many", "most", "those"]
# objects of `like` as a preposition after time-like subjects (simile objects)
OBJ_A = ["arrow", "bird", "rocket", "bullet", "shadow", "comet", "dream", "eagle", "river",
         "feather", "ghost", "train", "cloud", "wave", "star"]
OBJ_A_MASS = ["smoke"]
ADJ_A = ["swift", "silent", "golden", "wild", "distant", "sudden", "bright"]
# objects of `like` as a verb after insects (food)
OBJ_B = ["banana", "apple", "peach", "mango", "melon", "pear", "orange", "plum", "grape",
         "cherry", "lemon"]
OBJ_B_MASS = ["honey", "sugar", "jam", "syrup", "juice", "wine", "milk", "bread", "cheese",
              "vinegar"]
ADJ_B = ["ripe", "sweet", "sticky", "fresh", "rotten", "juicy"]
# objects both families use: there only the subject decides
OBJ_SHARED = ["wind", "song", "breeze", "storm"]
OBJ_SHARED_MASS = ["light", "sunshine", "music"]
ADJ_SHARED = ["old", "little", "soft", "warm", "gentle"]

ADV_PRE = ["really", "truly", "always", "often", "still", "simply", "surely"]  # before flies (A)
ADV_A_MID = ["just", "almost", "exactly"]                                      # flies _ like (A)
ADV_B_MID = ["just", "really", "always", "often", "also", "truly"]              # flies _ like (B)
PREFIX = [P(s) for s in ["they/PRON say/V", "we/PRON know/V", "i/PRON think/V", "but/CONJ",
                         "and/CONJ", "everyone/PRON knows/V"]]
TAIL_A = [P(s) for s in ["for/P us/PRON", "for/P everyone/PRON", "in/P the/D city/N",
                         "in/P the/D end/N", "these/D days/N", "at/P school/N", "at/P night/N"]]
TAIL_B = [P(s) for s in ["in/P the/D kitchen/N", "in/P the/D garden/N", "at/P night/N",
                         "in/P the/D barn/N", "on/P the/D table/N", "these/D days/N"]]


def np_obj(rng, count, mass, adjs, p_adj=0.3):
    """A noun phrase object: [det] [adj] noun, det a/an/the (count) or the/none (mass)."""
    if rng.random() < len(count) / float(len(count) + len(mass)):
        noun = pick(rng, count)
        det = "a" if maybe(rng, 0.6) else "the"
    else:
        noun = pick(rng, mass)
        det = "" if maybe(rng, 0.6) else "the"
    out = []
    if det:
        out.append((det, "D"))
    if maybe(rng, p_adj):
        out.append((pick(rng, adjs), "ADJ"))
    out.append((noun, "N"))
    return out, noun


def obj_a(rng):
    if maybe(rng, 0.3):
        return np_obj(rng, OBJ_SHARED, OBJ_SHARED_MASS, ADJ_SHARED)
    return np_obj(rng, OBJ_A, OBJ_A_MASS, ADJ_A)


def obj_b(rng):
    if maybe(rng, 0.3):
        return np_obj(rng, OBJ_SHARED, OBJ_SHARED_MASS, ADJ_SHARED)
    return np_obj(rng, OBJ_B, OBJ_B_MASS, ADJ_B)


def insect_subj(rng):
    det = pick(rng, INSECT_DET)
    ins = pick(rng, INSECTS)
    return ([(det, "D")] if det else []) + [(ins, "N")], ins


def clause_a(rng, adv=True):
    """[time-like subject] flies like [obj]: flies/V like/P."""
    subj = pick(rng, TIME_SUBJ)
    obj, noun = obj_a(rng)
    s = list(subj)
    r = rng.random()
    if adv and r < 0.15:
        s.append((pick(rng, ADV_PRE), "ADV"))
    s.append(("flies", "V"))
    if adv and 0.15 <= r < 0.25:
        s.append((pick(rng, ADV_A_MID), "ADV"))
    s += [("like", "P")] + obj
    return s, (" ".join(w for w, _ in subj), noun)


def clause_b(rng, adv=True):
    """[insect compound] flies like [obj]: flies/N like/V."""
    subj, ins = insect_subj(rng)
    obj, noun = obj_b(rng)
    s = subj + [("flies", "N")]
    r = rng.random()
    if adv and r < 0.15:
        s.append((pick(rng, ADV_B_MID), "ADV"))
    elif adv and r < 0.22:
        s += [("do", "V"), ("not", "ADV")]
    s += [("like", "V")] + obj
    return s, (ins, noun)


def fam_a(rng):
    s, key = clause_a(rng)
    if maybe(rng, 0.15):
        s = pick(rng, PREFIX) + s
    if maybe(rng, 0.2):
        s = s + pick(rng, TAIL_A)
    return s, ("A",) + key


def fam_b(rng):
    s, key = clause_b(rng)
    if maybe(rng, 0.15):
        s = pick(rng, PREFIX) + s
    if maybe(rng, 0.2):
        s = s + pick(rng, TAIL_B)
    return s, ("B",) + key


def fam_h(rng):
    """Both readings in one sentence: 'time flies like an arrow and fruit flies like a banana'."""
    a, ka = clause_a(rng, adv=False)
    b, kb = clause_b(rng, adv=False)
    conj = (pick(rng, ["and", "but", "while"]), "CONJ")
    s = a + [conj] + b if maybe(rng, 0.5) else b + [conj] + a
    return s, ("H",) + ka + kb


C_SUBJ_PEOPLE = [P(s) for s in [
    "i/PRON", "we/PRON", "you/PRON", "they/PRON", "the/D children/N", "people/N",
    "my/D friends/N", "most/D students/N", "the/D boys/N", "our/D parents/N", "the/D farmers/N",
    "many/D tourists/N", "the/D girls/N", "young/ADJ people/N", "my/D neighbours/N"]]
C_SUBJ_ANIMALS = [P(s) for s in [
    "the/D frogs/N", "the/D spiders/N", "the/D lizards/N", "the/D birds/N", "many/D frogs/N",
    "hungry/ADJ spiders/N", "most/D lizards/N", "toads/N", "frogs/N", "spiders/N", "swallows/N"]]
C_OBJ = [P(s) for s in [
    "the/D music/N", "the/D movie/N", "the/D garden/N", "the/D game/N", "the/D story/N",
    "the/D cake/N", "the/D flowers/N", "the/D rain/N", "the/D snow/N", "the/D park/N",
    "the/D beach/N", "the/D city/N", "hot/ADJ soup/N", "cold/ADJ water/N", "books/N", "songs/N",
    "stories/N", "games/N", "movies/N", "summer/N", "winter/N", "this/D song/N", "this/D town/N",
    "good/ADJ food/N", "long/ADJ trips/N", "the/D new/ADJ teacher/N", "our/D house/N"]]
C_OBJ_ANIMAL = [P(s) for s in [
    "flies/N", "the/D flies/N", "fat/ADJ flies/N", "small/ADJ flies/N", "fruit/N flies/N",
    "house/N flies/N", "the/D sand/N flies/N", "insects/N", "the/D worms/N", "warm/ADJ rocks/N",
    "the/D pond/N", "the/D rain/N", "the/D summer/N", "moths/N"]]
C_ADV = ["really", "also", "often", "still", "always", "truly"]


def fam_c(rng):
    """`like` as a verb after ordinary subjects: 'we like the music', 'frogs like flies'."""
    if maybe(rng, 0.35):
        subj = pick(rng, C_SUBJ_ANIMALS)
        obj = pick(rng, C_OBJ_ANIMAL)
    else:
        subj = pick(rng, C_SUBJ_PEOPLE)
        obj = pick(rng, C_OBJ)
    s = list(subj)
    r = rng.random()
    if r < 0.2:
        s.append((pick(rng, C_ADV), "ADV"))
    elif r < 0.3:
        s += [("do", "V"), ("not", "ADV")]
    s += [("like", "V")] + obj
    if maybe(rng, 0.15):
        s += P(pick(rng, ["very/ADV much/ADV", "a/D lot/N", "in/P the/D morning/N", "at/P night/N"]))
    return s, None


D_SUBJ = [(P(s), n) for s, n in [
    ("she/PRON", 1), ("he/PRON", 1), ("the/D girl/N", 1), ("the/D boy/N", 1), ("my/D sister/N", 1),
    ("the/D old/ADJ man/N", 1), ("the/D baby/N", 1), ("the/D dog/N", 1), ("the/D cat/N", 1),
    ("my/D brother/N", 1), ("they/PRON", 2), ("we/PRON", 2), ("the/D children/N", 2),
    ("the/D boys/N", 2), ("my/D friends/N", 2), ("the/D dancers/N", 2), ("you/PRON", 2)]]
D_VERB = [("sings", "sing"), ("runs", "run"), ("swims", "swim"), ("dances", "dance"),
          ("sleeps", "sleep"), ("talks", "talk"), ("walks", "walk"), ("fights", "fight"),
          ("works", "work"), ("climbs", "climb"), ("eats", "eat"), ("looks", "look"),
          ("moves", "move"), ("cries", "cry"), ("smells", "smell"), ("jumps", "jump")]
D_OBJ = ["bird", "fish", "baby", "cat", "king", "queen", "child", "angel", "monkey", "lion",
         "soldier", "horse", "pig", "dream", "eagle", "star"]
D_OBJ_SHARED = [P(s) for s in ["the/D wind/N", "a/D storm/N", "an/D old/ADJ man/N", "a/D ghost/N",
                               "the/D rain/N"]]


def fam_d(rng):
    """`like` as a preposition after other verbs: 'she sings like a bird'."""
    subj, num = pick(rng, D_SUBJ)
    verb = pick(rng, D_VERB)[0 if num == 1 else 1]
    s = list(subj) + [(verb, "V")]
    if maybe(rng, 0.15):
        s.append((pick(rng, ["just", "almost", "exactly"]), "ADV"))
    s.append(("like", "P"))
    if maybe(rng, 0.2):
        obj = list(pick(rng, D_OBJ_SHARED))
    else:
        obj = [("a", "D")]
        if maybe(rng, 0.25):
            obj.append((pick(rng, ["little", "wild", "happy", "sleepy", "young"]), "ADJ"))
        obj.append((pick(rng, D_OBJ), "N"))
    s += obj
    if maybe(rng, 0.2):
        s += P(pick(rng, ["every/D day/N", "at/P night/N", "in/P the/D rain/N", "all/D day/N",
                          "in/P the/D garden/N"]))
    return fix_articles(s), None


E_SUBJ = [P(s) for s in [
    "the/D plane/N", "the/D bird/N", "an/D eagle/N", "the/D kite/N", "the/D balloon/N",
    "the/D crow/N", "an/D owl/N", "the/D jet/N", "the/D butterfly/N", "the/D helicopter/N",
    "the/D parrot/N", "the/D seagull/N", "the/D hawk/N", "the/D pigeon/N", "my/D kite/N",
    "the/D swallow/N", "a/D bat/N", "the/D pilot/N", "the/D captain/N"]]
E_PILOT = [P(s) for s in ["the/D pilot/N", "the/D captain/N", "my/D uncle/N", "she/PRON",
                          "he/PRON", "the/D young/ADJ pilot/N", "her/D father/N"]]
E_PP = [P(s) for s in [
    "over/P the/D city/N", "above/P the/D hills/N", "to/P the/D nest/N", "across/P the/D sea/N",
    "through/P the/D clouds/N", "into/P the/D sky/N", "around/P the/D tower/N",
    "toward/P the/D sun/N", "over/P the/D river/N", "past/P the/D window/N",
    "under/P the/D bridge/N", "along/P the/D coast/N", "between/P the/D trees/N",
    "over/P the/D old/ADJ town/N", "across/P the/D wide/ADJ lake/N"]]
E_T = [P(s) for s in ["at/P night/N", "every/D day/N", "in/P the/D morning/N", "in/P winter/N",
                      "again/ADV"]]
E_TIME_TAIL = [P(s) for s in [
    "quickly/ADV", "so/ADV quickly/ADV", "too/ADV quickly/ADV", "away/ADV",
    "when/CONJ we/PRON have/V fun/N", "when/CONJ you/PRON are/V busy/ADJ",
    "while/CONJ we/PRON sleep/V", "when/CONJ you/PRON are/V happy/ADJ",
    "while/CONJ we/PRON work/V", "so/ADV fast/ADV"]]
E_VEHICLE = [P(s) for s in ["the/D plane/N", "a/D jet/N", "the/D helicopter/N", "a/D small/ADJ plane/N",
                            "the/D balloon/N", "a/D kite/N", "the/D old/ADJ jet/N"]]


def fam_e(rng):
    """`flies` as a verb elsewhere: 'the plane flies over the city', 'the bird flies like an arrow',
    'time flies when we have fun', 'the pilot flies the plane'."""
    r = rng.random()
    if r < 0.45:
        s = list(pick(rng, E_SUBJ))
        if maybe(rng, 0.15):
            s.append((pick(rng, ["slowly", "always", "often", "still"]), "ADV"))
        s += [("flies", "V")] + pick(rng, E_PP)
        if maybe(rng, 0.25):
            s += pick(rng, E_T)
    elif r < 0.7:
        s = list(pick(rng, E_SUBJ)) + [("flies", "V"), ("like", "P")]
        obj, _ = obj_a(rng)
        s += obj
    elif r < 0.85:
        s = list(pick(rng, TIME_SUBJ))
        if maybe(rng, 0.2):
            s.append((pick(rng, ADV_PRE), "ADV"))
        s += [("flies", "V")] + pick(rng, E_TIME_TAIL)
    else:
        s = list(pick(rng, E_PILOT)) + [("flies", "V")] + pick(rng, E_VEHICLE)
        if maybe(rng, 0.4):
            s += pick(rng, E_PP + E_T)
    return fix_articles(s), None


F_DET = ["the", "the", "many", "some", "these", "those", "", "all/D the"]
F_ADJ = ["fat", "tiny", "big", "small", "green", "dead", "hungry", "noisy", "annoying"]
F_VERB = ["buzz", "land", "sit", "crawl", "gather", "swarm", "rest", "hide", "walk", "dance"]
F_PP = [P(s) for s in [
    "around/P the/D kitchen/N", "on/P the/D window/N", "near/P the/D lamp/N",
    "over/P the/D table/N", "in/P the/D garden/N", "on/P the/D ceiling/N",
    "around/P the/D light/N", "near/P the/D fruit/N", "around/P the/D bowl/N", "on/P the/D cake/N",
    "in/P the/D barn/N", "on/P the/D wall/N", "in/P the/D summer/N", "at/P night/N",
    "like/P bees/N"]]
F_TR_SUBJ = [(P(s), n) for s, n in [
    ("she/PRON", 1), ("he/PRON", 1), ("the/D frog/N", 1), ("the/D spider/N", 1),
    ("the/D lizard/N", 1), ("my/D mother/N", 1), ("the/D cat/N", 1), ("we/PRON", 2),
    ("they/PRON", 2), ("the/D children/N", 2), ("the/D farmers/N", 2), ("frogs/N", 2)]]
F_TR_VERB = [("swats", "swat"), ("eats", "eat"), ("catches", "catch"), ("hates", "hate"),
             ("kills", "kill"), ("watches", "watch"), ("counts", "count"), ("sees", "see"),
             ("chases", "chase"), ("traps", "trap")]


def flies_np(rng):
    det = pick(rng, F_DET)
    s = P("all/D the/D") if det == "all/D the" else ([(det, "D")] if det else [])
    r = rng.random()
    if r < 0.3:
        s.append((pick(rng, F_ADJ), "ADJ"))
    elif r < 0.55:
        s.append((pick(rng, INSECTS), "N"))
    s.append(("flies", "N"))
    return s


def fam_f(rng):
    """`flies` as a noun elsewhere: 'the flies buzz around the kitchen', 'she swats the flies'."""
    if maybe(rng, 0.55):
        s = flies_np(rng)
        if maybe(rng, 0.15):
            s.append((pick(rng, ["often", "always", "slowly", "still"]), "ADV"))
        s += [(pick(rng, F_VERB), "V")] + pick(rng, F_PP)
    else:
        subj, num = pick(rng, F_TR_SUBJ)
        verb = pick(rng, F_TR_VERB)[0 if num == 1 else 1]
        s = list(subj) + [(verb, "V")] + flies_np(rng)
        if maybe(rng, 0.3):
            s += pick(rng, F_PP[:-1] + E_T[:-1])
    return fix_articles(s), None


def make_flies():
    rng = random.Random(SEEDS["flies"])
    n_tr, n_va = SIZES["flies"]
    # family: (generator, train lines, valid lines, held-out valid lines)
    fams = [
        ("A", fam_a, 920, 138, 70),
        ("B", fam_b, 900, 135, 68),
        ("H", fam_h, 180, 27, 0),
        ("C", fam_c, 500, 75, 0),
        ("D", fam_d, 500, 75, 0),
        ("E", fam_e, 500, 75, 0),
        ("F", fam_f, 500, 75, 0),
    ]
    assert sum(f[2] for f in fams) == n_tr and sum(f[3] for f in fams) == n_va
    # held-out (subject, object) pairs of families A and B: seen only in valid
    subj_a = sorted(set(" ".join(w for w, _ in s) for s in TIME_SUBJ))
    obj_a_all = OBJ_A + OBJ_A_MASS + OBJ_SHARED + OBJ_SHARED_MASS
    obj_b_all = OBJ_B + OBJ_B_MASS + OBJ_SHARED + OBJ_SHARED_MASS
    held = set()
    held |= set(("A",) + k for k in hold_out(rng, [(s, o) for s in subj_a for o in obj_a_all], 0.12,
                                             forced=[("time", "arrow")]))
    held |= set(("B",) + k for k in hold_out(rng, [(s, o) for s in INSECTS for o in obj_b_all], 0.12,
                                             forced=[("fruit", "banana")]))
    # the two probes: only in valid
    probes = {
        "A": [(FLIES_PROBES[0], P("time/N flies/V like/P an/D arrow/N"))],
        "B": [(FLIES_PROBES[1], P("fruit/N flies/N like/V a/D banana/N"))],
    }
    seen = {}
    train, valid = [], []

    def gen_for(name, fn):
        def g(r):
            s, key = fn(r)
            s = fix_articles(s)
            text = " ".join(w for w, _ in s)
            return text, tuple(s), key
        return g

    def held_pred(key):
        if key is None:
            return False
        if key[0] == "H":  # the two clauses of an H sentence: neither may be a held-out pair
            return ("A",) + key[1:3] in held or ("B",) + key[3:5] in held
        return key in held

    vocab = lambda item: [w for w, _ in item]
    for name, fn, ntr, nva, nheld in fams:
        forced = [(t, tuple(s)) for t, s in probes.get(name, [])]
        tr, va = draw_split(rng, gen_for(name, fn), ntr, nva, seen, held_pred, nheld, forced, vocab)
        train += tr
        valid += va
    rng.shuffle(train)
    rng.shuffle(valid)
    fmt = lambda s: " ".join(w for w, _ in s) + "\t" + " ".join(t for _, t in s)
    return [fmt(s) for s in train], [fmt(s) for s in valid], held


# ----------------------------------------------------------------------------------------------
# 2./3. bank: word sense of `bank` from one decider word 1..6 positions away

BANK_DECIDERS = {
    "RIVER": {
        "X": ["river", "stream", "water", "boats", "ducks", "fish", "reeds", "swans", "fishermen",
              "canoe", "current", "frogs", "willows", "ferry", "otters", "rapids"],
        "DA": ["muddy", "grassy", "sandy", "mossy", "steep", "rocky"],
        "DV": ["fish", "swim", "paddle", "wade", "row", "camp"],
        "DV3": ["floods", "erodes", "crumbles", "overflows"],
    },
    "MONEY": {
        "X": ["money", "cash", "loan", "teller", "account", "deposit", "vault", "interest",
              "savings", "mortgage", "cheque", "cashier", "coins", "debt", "banker", "salary"],
        "DA": ["investment", "central", "national", "commercial", "merchant", "online"],
        "DV": ["borrow", "withdraw", "deposit", "invest", "pay", "save"],
        "DV3": ["lends", "charges", "invests", "pays"],
    },
}
BANK_S = ["we", "they", "i", "she", "he", "my friend", "the man", "the woman", "our neighbours",
          "the children", "my brother", "the tourists", "the old man", "my father", "the students"]
BANK_A = ["old", "big", "small", "quiet", "new", "large", "white", "little", "empty", "famous"]
BANK_T = ["", "", "", "yesterday", "today", "again", "last week", "every morning", "on sunday",
          "after lunch", "in the morning", "that day", "at noon", "once", "later"]
BANK_T3 = ["", "", "every year", "every month", "sometimes", "again", "now", "these days"]
BANK_PRED = ["quiet", "empty", "small", "old", "famous", "new", "dark", "closed", "crowded"]
BANK_O = ["our friends", "the family", "him", "them", "her", "my cousin"]
# frames: {S} subject, {A} 0-2 neutral adjectives, {T} optional time, {X}/{DA}/{DV}/{DV3} the
# decider (noun / adjective before bank / verb after 'to' / verb with bank as subject),
# {PRED} predicate adjective, {O} object, {a} a/an.
BANK_FRAMES = [
    "{S} talked about the {X} near the {A} bank {T}",
    "{S} walked to the {A} bank {T} to look at the {X}",
    "{S} went to the {A} bank with the {X} {T}",
    "{S} saw the {X} from the {A} bank {T}",
    "at the {DA} {A} bank {S} waited {T}",
    "{S} went to the {A} bank {T} to {DV}",
    "{S} came to {DV} at the {A} bank {T}",
    "the {A} bank by the {X} was {PRED}",
    "{S} asked about the {X} at the {A} bank {T}",
    "the {A} bank was far from the {X}",
    "there was {a} {A} bank near the {X}",
    "{S} looked at the {A} bank and thought about the {X}",
    "{S} left the {A} bank {T} because of the {X}",
    "the {A} bank {DV3} {T3}",
    "the {X} near the {A} bank looked {PRED} {T}",
    "{S} met {O} at the {DA} {A} bank {T}",
    "{S} sat by the {A} bank talking about the {X}",
    "{S} liked the {X} but not the {A} bank",
    "{S} wanted to {DV} so {S2} walked to the {A} bank",
    "{S} told me about the {DA} {A} bank {T}",
    "near the {X} {S} found {a} {A} bank",
    "the {DA} {A} bank is {PRED} {T3}",
    "{S} went to the {A} bank to {DV} {T}",
    "{S} said the {A} bank {DV3} {T3}",
]


def bank_sentence(rng, label=None):
    """Returns (words, bank index, decider index, label, frame id, decider word) or None."""
    if label is None:
        label = "RIVER" if maybe(rng, 0.5) else "MONEY"
    fid = rng.randrange(len(BANK_FRAMES))
    frame = BANK_FRAMES[fid]
    lex = BANK_DECIDERS[label]
    n_adj = wpick(rng, [(0.5, 0), (0.35, 1), (0.15, 2)])
    adjs = rng.sample(BANK_A, n_adj)
    words = []
    dec_word = None
    for tok in frame.split():
        if tok == "{S}" or tok == "{S2}":
            words += pick(rng, BANK_S).split()
        elif tok == "{A}":
            words += adjs
        elif tok == "{T}":
            words += pick(rng, BANK_T).split()
        elif tok == "{T3}":
            words += pick(rng, BANK_T3).split()
        elif tok == "{PRED}":
            words.append(pick(rng, [p for p in BANK_PRED if p not in adjs]))
        elif tok == "{O}":
            words += pick(rng, BANK_O).split()
        elif tok in ("{X}", "{DA}", "{DV}", "{DV3}"):
            dec_word = pick(rng, lex[tok[1:-1]])
            words.append(dec_word)
        else:
            words.append(tok)
    for i, w in enumerate(words):
        if w == "{a}":
            words[i] = article(words[i + 1])
    b = words.index("bank")
    d = words.index(dec_word)
    return words, b, d, label, fid, dec_word


def bank_item(rng):
    while True:
        words, b, d, label, fid, dec = bank_sentence(rng)
        if 1 <= abs(d - b) <= 6 and len(words) <= MAX_WORDS["bank"]:
            return words, b, label, (fid, dec)


def make_bank():
    rng = random.Random(SEEDS["bank"])
    n_tr, n_va = SIZES["bank"]
    keys = [(f, w) for f in range(len(BANK_FRAMES)) for lab in BANK_LABELS
            for slot in BANK_DECIDERS[lab] for w in BANK_DECIDERS[lab][slot]
            if "{" + slot + "}" in BANK_FRAMES[f].split()]
    held = hold_out(rng, keys, 0.08)

    def gen(r):
        words, b, label, key = bank_item(r)
        tags = ["O"] * len(words)
        tags[b] = label
        text = " ".join(words)
        return text, (text, " ".join(tags)), key

    train, valid = draw_split(rng, gen, n_tr, n_va, {}, lambda k: k in held, n_va // 2,
                              vocab_of=lambda item: item[0].split(" "))
    rng.shuffle(train)
    rng.shuffle(valid)
    return [t + "\t" + g for t, g in train], [t + "\t" + g for t, g in valid], held


def make_bank_classify():
    rng = random.Random(SEEDS["bank_classify"])
    n_tr, n_va = SIZES["bank_classify"]

    def gen(r):
        words, b, label, key = bank_item(r)
        text = " ".join(words)
        return text, (label, text), key

    train, valid = draw_split(rng, gen, n_tr, n_va, {}, vocab_of=lambda item: item[1].split(" "))
    rng.shuffle(train)
    rng.shuffle(valid)
    return [l + "\t" + t for l, t in train], [l + "\t" + t for l, t in valid]


# ----------------------------------------------------------------------------------------------
# 4. reverse: tag i = token n-1-i

def make_reverse():
    rng = random.Random(SEEDS["reverse"])
    n_tr, n_va = SIZES["reverse"]

    def gen(r):
        n = r.randint(4, 12)
        toks = [pick(r, REVERSE_SYMBOLS) for _ in range(n)]
        text = " ".join(toks)
        return text, text + "\t" + " ".join(reversed(toks)), None

    return draw_split(rng, gen, n_tr, n_va, {})


# ----------------------------------------------------------------------------------------------
# 5. lm: Korean and English sentences

def hangul_final(word):
    """Index of the final consonant (jongseong) of the last Hangul syllable: 0 = none, 8 = ㄹ."""
    code = ord(word[-1])
    assert 0xAC00 <= code <= 0xD7A3, word
    return (code - 0xAC00) % 28


def ko(noun, particle):
    """Attach a particle, choosing its form by whether the last syllable has a final consonant."""
    f = hangul_final(noun)
    forms = {"subj": ("이", "가"), "obj": ("을", "를"), "top": ("은", "는"), "and": ("과", "와")}
    if particle in forms:
        return noun + forms[particle][0 if f else 1]
    if particle == "dir":  # (으)로: 로 after a vowel or ㄹ
        return noun + ("로" if f in (0, 8) else "으로")
    if particle in ("에", "에서", "의"):
        return noun + particle
    raise ValueError(particle)


KO_PEOPLE = ["학생", "학생들", "아이", "아이들", "선생님", "엄마", "아빠", "동생", "친구", "친구들",
             "할머니", "할아버지", "사람들", "의사", "요리사", "민수", "지민", "서연", "누나", "형"]
KO_ANIMALS = ["고양이", "개", "강아지", "새", "곰", "토끼", "말", "호랑이", "원숭이", "오리"]
KO_PRON = ["나", "저", "우리", "그"]
KO_OBJ = {
    "먹는다": ["생선", "밥", "사과", "빵", "고기", "과자", "김치", "바나나", "떡", "수박", "포도",
              "딸기", "국수", "라면"],
    "마신다": ["물", "우유", "커피", "차", "주스"],
    "읽는다": ["책", "신문", "편지", "소설", "잡지", "시"],
    "쓴다": ["편지", "일기", "시", "소설", "이름"],
    "본다": ["영화", "그림", "하늘", "바다", "사진", "꽃", "달"],
    "산다": ["옷", "책", "사과", "신발", "가방", "우산", "꽃"],
    "만든다": ["빵", "음식", "케이크", "의자", "김밥", "인형"],
    "그린다": ["그림", "꽃", "나무", "집", "고양이"],
    "부른다": ["노래"],
    "찾는다": ["가방", "우산", "신발", "열쇠", "고양이"],
}
KO_ANIMAL_OBJ = {  # what animals eat, drink and like
    "먹는다": ["생선", "밥", "사과", "고기", "과자", "바나나", "수박", "포도", "딸기"],
    "마신다": ["물", "우유"],
}
KO_ANIMAL_VERBS = sorted(KO_ANIMAL_OBJ)
KO_PLACES = ["학교", "집", "공원", "시장", "도서관", "식당", "바다", "산", "교실", "서울", "부산",
             "병원", "회사", "시골"]
KO_TIME = ["오늘", "매일", "지금", "아침에", "저녁에", "주말에", "가끔", "내일"]
KO_ADV = ["천천히", "빨리", "같이", "열심히", "자주", "조용히"]
KO_ADJ = ["작은", "큰", "새", "예쁜", "오래된", "좋은"]
KO_MOVE = ["간다", "온다"]
KO_ALL_NOUNS = sorted(set(KO_PEOPLE + KO_ANIMALS + KO_PRON + KO_PLACES +
                          [o for v in KO_OBJ for o in KO_OBJ[v]]), key=lambda s: (-len(s), s))


def ko_sentence(rng):
    r = rng.random()
    w = []
    if r < 0.3:  # [time] S이/가 [adv] O을/를 V
        if maybe(rng, 0.3):
            w.append(pick(rng, KO_TIME))
        if maybe(rng, 0.3):
            subj = pick(rng, KO_ANIMALS)
            verb = pick(rng, KO_ANIMAL_VERBS)
            objs = KO_ANIMAL_OBJ[verb]
        else:
            subj = pick(rng, KO_PEOPLE)
            verb = pick(rng, sorted(KO_OBJ))
            objs = KO_OBJ[verb]
        w.append(ko(subj, "subj"))
        if maybe(rng, 0.25):
            w.append(pick(rng, KO_ADV))
        w += [ko(pick(rng, objs), "obj"), verb]
    elif r < 0.45:  # S은/는 [time] PLACE에 간다/온다
        w.append(ko(pick(rng, KO_PRON + KO_PEOPLE), "top"))
        if maybe(rng, 0.4):
            w.append(pick(rng, KO_TIME))
        w += [ko(pick(rng, KO_PLACES), "에"), pick(rng, KO_MOVE)]
    elif r < 0.6:  # S와/과 S2이/가 O을/를 V
        group = KO_ANIMALS if maybe(rng, 0.3) else KO_PEOPLE
        a, b = rng.sample(group, 2)
        if group is KO_ANIMALS:
            verb = pick(rng, KO_ANIMAL_VERBS)
            objs = KO_ANIMAL_OBJ[verb]
        else:
            verb = pick(rng, sorted(KO_OBJ))
            objs = KO_OBJ[verb]
        w += [ko(a, "and"), ko(b, "subj")]
        if maybe(rng, 0.3):
            w.append(pick(rng, KO_ADV))
        w += [ko(pick(rng, objs), "obj"), verb]
    elif r < 0.75:  # S이/가 [time] PLACE에서 O을/를 V
        verb = pick(rng, sorted(KO_OBJ))
        w.append(ko(pick(rng, KO_PEOPLE), "subj"))
        if maybe(rng, 0.3):
            w.append(pick(rng, KO_TIME))
        w += [ko(pick(rng, KO_PLACES), "에서"), ko(pick(rng, KO_OBJ[verb]), "obj"), verb]
    elif r < 0.88:  # S은/는 [adj] O을/를 좋아한다
        subj = pick(rng, KO_PRON + KO_PEOPLE + KO_ANIMALS)
        w.append(ko(subj, "top"))
        if maybe(rng, 0.4):
            w.append(pick(rng, KO_ADJ))
        table = KO_ANIMAL_OBJ if subj in KO_ANIMALS else KO_OBJ
        objs = sorted(set(o for v in table for o in table[v]))
        w += [ko(pick(rng, objs), "obj"), "좋아한다"]
    else:  # S은/는 [time] PLACE(으)로 간다
        w.append(ko(pick(rng, KO_PRON + KO_PEOPLE), "top"))
        if maybe(rng, 0.4):
            w.append(pick(rng, KO_TIME))
        w += [ko(pick(rng, KO_PLACES), "dir"), pick(rng, KO_MOVE)]
    return w


EN_SUBJ = [(s, n) for s, n in [
    ("cat", 1), ("dog", 1), ("bird", 1), ("student", 1), ("teacher", 1), ("girl", 1), ("boy", 1),
    ("mother", 1), ("father", 1), ("doctor", 1), ("cook", 1), ("farmer", 1), ("baby", 1),
    ("cats", 2), ("dogs", 2), ("birds", 2), ("students", 2), ("teachers", 2), ("girls", 2),
    ("boys", 2), ("children", 2), ("farmers", 2), ("people", 2)]]
EN_ANIMALS = {"cat", "dog", "bird", "cats", "dogs", "birds"}
EN_VERB = {  # base -> (3sg, objects: "count:" singular count nouns, "mass:" bare, "pl:" plurals)
    "eat": ("eats", ["c:apple", "c:egg", "c:orange", "m:fish", "m:rice", "m:bread", "m:meat",
                     "m:cake", "m:soup", "p:bananas", "p:apples", "p:cookies"]),
    "drink": ("drinks", ["m:water", "m:milk", "m:coffee", "m:tea", "m:juice"]),
    "read": ("reads", ["c:book", "c:letter", "c:story", "c:newspaper", "p:books", "p:magazines"]),
    "write": ("writes", ["c:letter", "c:story", "c:poem", "c:song", "p:letters"]),
    "watch": ("watches", ["c:movie", "m:television", "p:birds", "p:clouds"]),
    "buy": ("buys", ["m:clothes", "p:shoes", "c:bag", "c:umbrella", "p:flowers", "c:book"]),
    "make": ("makes", ["m:bread", "c:cake", "m:food", "c:chair", "c:doll", "m:tea"]),
    "draw": ("draws", ["c:picture", "c:flower", "c:tree", "c:house", "c:cat"]),
    "sing": ("sings", ["c:song", "p:songs"]),
    "find": ("finds", ["c:key", "c:umbrella", "c:bag", "c:coin", "p:shells"]),
}
EN_ANIMAL_OBJ = {  # what animals eat, drink and like
    "eat": ["c:apple", "m:fish", "m:rice", "m:bread", "m:meat", "p:bananas", "p:apples", "p:cookies"],
    "drink": ["m:water", "m:milk"],
}
EN_ANIMAL_VERBS = sorted(EN_ANIMAL_OBJ)
EN_ADJ = ["big", "small", "old", "new", "red", "little", "good", "warm"]
EN_SUBJ_ADJ = ["little", "old", "young", "small", "big"]
EN_MY_OK = {"mother", "father", "teacher", "doctor", "cat", "dog", "bird", "cats", "dogs", "birds",
            "teachers", "children"}
EN_A_NOT = {"mother", "father"}
EN_PLACE = ["the park", "the school", "the market", "the library", "the garden", "the kitchen",
            "the river", "the beach", "the city", "the house"]
EN_TIME = ["every day", "today", "in the morning", "at night", "on sunday", "every evening",
           "now", "again"]
EN_INTRANS = [("sleeps", "sleep"), ("runs", "run"), ("plays", "play"), ("walks", "walk"),
              ("sits", "sit"), ("waits", "wait")]
EN_PRED = ["happy", "tired", "hungry", "small", "big", "busy", "sleepy", "quiet"]


def en_obj(rng, spec):
    kind, noun = spec.split(":")
    out = []
    if kind == "c":
        det = wpick(rng, [(0.5, "a"), (0.3, "the"), (0.2, "my")])
        out.append(det)
        if maybe(rng, 0.25):
            out.append(pick(rng, EN_ADJ))
        out.append(noun)
        if det == "a":
            out[0] = article(out[1])
    else:
        if maybe(rng, 0.3):
            out.append("the")
        if maybe(rng, 0.2):
            out.append(pick(rng, EN_ADJ))
        out.append(noun)
    return out


def en_subj(rng):
    noun, num = pick(rng, EN_SUBJ)
    if noun == "people":
        det = pick(rng, ["", "the", "many"])
    elif num == 1:
        det = wpick(rng, [(0.5, "the"), (0.3, "a"), (0.2, "my")])
    else:
        det = wpick(rng, [(0.5, "the"), (0.2, "my"), (0.2, ""), (0.1, "many")])
    if det == "my" and noun not in EN_MY_OK or det == "a" and noun in EN_A_NOT:
        det = "the"
    w = [det] if det else []
    if maybe(rng, 0.15):
        w.append(pick(rng, EN_SUBJ_ADJ))
    w.append(noun)
    if w[0] == "a":
        w[0] = article(w[1])
    return w, num, noun


def en_sentence(rng):
    r = rng.random()
    subj, num, noun = en_subj(rng)
    if r < 0.45:  # S V O [time | in PLACE]
        if noun in EN_ANIMALS:
            base = pick(rng, EN_ANIMAL_VERBS)
            objs = EN_ANIMAL_OBJ[base]
        else:
            base = pick(rng, sorted(EN_VERB))
            objs = EN_VERB[base][1]
        verb = EN_VERB[base][0] if num == 1 else base
        w = subj + [verb] + en_obj(rng, pick(rng, objs))
        t = rng.random()
        if t < 0.2:
            w += pick(rng, EN_TIME).split()
        elif t < 0.35:
            w += ["in"] + pick(rng, EN_PLACE).split()
    elif r < 0.6:  # S goes to PLACE [time]
        verb = "goes" if num == 1 else "go"
        w = subj + [verb, "to"] + pick(rng, EN_PLACE).split()
        if maybe(rng, 0.4):
            w += pick(rng, EN_TIME).split()
    elif r < 0.75:  # S likes O
        verb = "likes" if num == 1 else "like"
        table = EN_ANIMAL_OBJ if noun in EN_ANIMALS else dict((k, v[1]) for k, v in EN_VERB.items())
        base = pick(rng, sorted(table))
        w = subj + [verb] + en_obj(rng, pick(rng, table[base]))
    elif r < 0.88:  # S V_intr [in PLACE | time]
        v = pick(rng, EN_INTRANS)
        w = subj + [v[0] if num == 1 else v[1]]
        t = rng.random()
        if t < 0.5:
            w += ["in"] + pick(rng, EN_PLACE).split()
        elif t < 0.85:
            w += pick(rng, EN_TIME).split()
    else:  # S is/are [very] ADJ
        w = subj + ["is" if num == 1 else "are"]
        if maybe(rng, 0.3):
            w.append("very")
        w.append(pick(rng, EN_PRED))
    return w


def make_lm():
    rng = random.Random(SEEDS["lm"])
    n_tr, n_va = SIZES["lm"]
    seen = {}

    def wrap(fn):
        def g(r):
            while True:
                w = fn(r)
                if MIN_WORDS["lm"] <= len(w) <= MAX_WORDS["lm"]:
                    text = " ".join(w)
                    return text, text, None
        return g

    vocab = lambda item: item.split(" ")
    ko_tr, ko_va = draw_split(rng, wrap(ko_sentence), n_tr // 2, n_va // 2, seen, vocab_of=vocab)
    en_tr, en_va = draw_split(rng, wrap(en_sentence), n_tr - n_tr // 2, n_va - n_va // 2, seen,
                              vocab_of=vocab)
    train, valid = ko_tr + en_tr, ko_va + en_va
    rng.shuffle(train)
    rng.shuffle(valid)
    return train, valid


# ----------------------------------------------------------------------------------------------
# checks

HANGUL_RE = re.compile("^[\uac00-\ud7a3]+$")
ASCII_WORD_RE = re.compile("^[a-z]+$")


def is_korean(w):
    return HANGUL_RE.match(w) is not None


def split_line(task, line):
    """-> (words, tags or None, label or None); asserts the format contract."""
    assert line != "", "empty line"
    assert line == line.strip(" "), "leading/trailing space: %r" % line
    assert "\r" not in line and "\n" not in line
    if task == "tag":
        assert line.count("\t") == 1, line
        a, b = line.split("\t")
        words, tags = a.split(" "), b.split(" ")
        assert len(words) == len(tags), line
    elif task == "classify":
        assert line.count("\t") == 1, line
        label, a = line.split("\t")
        words, tags = a.split(" "), None
        assert label and " " not in label, line
    else:
        assert "\t" not in line, line
        words, tags, label = line.split(" "), None, None
    for w in words + (tags or []):
        assert w != "" and " " not in w and "\t" not in w, "bad word in %r" % line
    return words, tags, (label if task == "classify" else None)


def check_corpus(name, train, valid):
    task = TASK[name]
    for split, lines in (("train", train), ("valid", valid)):
        n = SIZES[name][0 if split == "train" else 1]
        assert len(lines) == n, (name, split, len(lines), n)
        texts = set()
        for line in lines:
            words, tags, label = split_line(task, line)
            assert MIN_WORDS[name] <= len(words) <= MAX_WORDS[name], (name, line)
            for w in words:
                if name == "lm":
                    assert ASCII_WORD_RE.match(w) or is_korean(w), (name, w)
                    assert unicodedata.is_normalized("NFC", w)
                else:
                    assert ASCII_WORD_RE.match(w), (name, w)
            if name == "flies":
                assert all(t in FLIES_TAGS for t in tags), line
            if name == "bank":
                assert all(t in BANK_TAGS for t in tags), line
            if name == "bank_classify":
                assert label in BANK_LABELS, line
            if name == "reverse":
                assert all(w in REVERSE_SYMBOLS for w in words), line
                assert tags == words[::-1], line
            text = " ".join(words)
            assert text not in texts, ("duplicate in %s/%s" % (name, split), text)
            texts.add(text)
        if split == "train":
            train_texts = texts
            train_vocab = set(w for l in lines for w in split_line(task, l)[0])
        else:
            both = texts & train_texts
            assert not both, ("valid sentence in train", name, sorted(both)[:3])
            valid_vocab = set(w for l in lines for w in split_line(task, l)[0])
            assert valid_vocab <= train_vocab, ("valid word not in train", name,
                                                sorted(valid_vocab - train_vocab)[:5])


def tagged(lines):
    out = []
    for l in lines:
        a, b = l.split("\t")
        out.append(list(zip(a.split(" "), b.split(" "))))
    return out


def check_flies(train, valid):
    tr, va = tagged(train), tagged(valid)
    texts_tr = set(" ".join(w for w, _ in s) for s in tr)
    texts_va = set(" ".join(w for w, _ in s) for s in va)
    for p in FLIES_PROBES:
        assert p not in texts_tr and p in texts_va, p
    word_tags = {}
    prev_tag = {}
    for s in tr + va:
        for i, (w, t) in enumerate(s):
            word_tags.setdefault(w, set()).add(t)
            if w == "flies":  # the word before flies decides its tag
                prev = s[i - 1][0] if i else "<s>"
                prev_tag.setdefault(prev, set()).add(t)
            if w == "like" and i and s[i - 1][0] == "flies":  # like after flies: P iff flies is V
                assert (t == "P") == (s[i - 1][1] == "V"), s
    for w, ts in word_tags.items():
        if w in FLIES_AMBIGUOUS:
            assert len(ts) == 2, (w, ts)
        else:
            assert len(ts) == 1, ("word with two tags", w, ts)
    for prev, ts in prev_tag.items():
        assert len(ts) == 1, ("tag of flies not decided by the word before it", prev, ts)


def bank_lex():
    lex = {}
    for lab in BANK_LABELS:
        for slot in BANK_DECIDERS[lab]:
            for w in BANK_DECIDERS[lab][slot]:
                assert lex.get(w, lab) == lab, w
                lex[w] = lab
    return lex


def check_bank(train, valid, classify=False):
    lex = bank_lex()
    class_words = {"RIVER": set(), "MONEY": set()}
    for split, lines in (("train", train), ("valid", valid)):
        for line in lines:
            if classify:
                label, text = line.split("\t")
                words = text.split(" ")
            else:
                a, b = line.split("\t")
                words, tags = a.split(" "), b.split(" ")
                assert words.count("bank") == 1
                label = tags[words.index("bank")]
                assert all(t == "O" for i, t in enumerate(tags) if words[i] != "bank")
            assert words.count("bank") == 1, line
            decs = [i for i, w in enumerate(words) if w in lex]
            assert len(decs) == 1, ("exactly one decider", line)
            assert lex[words[decs[0]]] == label, line
            assert 1 <= abs(decs[0] - words.index("bank")) <= 6, line
            if split == "train":
                class_words[label].update(w for w in words if w not in lex and w != "bank")
    # every non-decider word occurs with both senses: the decider is the only evidence
    only = class_words["RIVER"] ^ class_words["MONEY"]
    assert not only, ("neutral words seen with one sense only", sorted(only))


def check_lm(train, valid):
    parts = [("이", "가"), ("을", "를"), ("은", "는"), ("과", "와")]
    n_ko = 0
    for line in train + valid:
        words = line.split(" ")
        kor = [is_korean(w) for w in words]
        assert all(kor) or not any(kor), ("mixed line", line)
        n_ko += all(kor)
        if not all(kor):
            continue
        for w in words:
            for noun in KO_ALL_NOUNS:
                if w.startswith(noun) and len(w) > len(noun):
                    rest = w[len(noun):]
                    f = hangul_final(noun)
                    for with_final, without in parts:
                        if rest in (with_final, without):
                            assert rest == (with_final if f else without), ("particle", w)
                    if rest in ("로", "으로"):
                        assert rest == ("로" if f in (0, 8) else "으로"), ("particle", w)
                    break
    n = len(train) + len(valid)
    assert abs(n_ko - n / 2) <= 1, (n_ko, n)
    # spot checks of the batchim rule
    assert ko("고양이", "subj") == "고양이가" and ko("생선", "obj") == "생선을"
    assert ko("학생들", "subj") == "학생들이" and ko("책", "obj") == "책을"
    assert ko("나", "top") == "나는" and ko("집", "dir") == "집으로" and ko("서울", "dir") == "서울로"


# ----------------------------------------------------------------------------------------------
# statistics and README

def stats(task, lines):
    words = [w for l in lines for w in split_line(task, l)[0]]
    lens = [len(split_line(task, l)[0]) for l in lines]
    return {"lines": len(lines), "words": len(words), "vocab": len(set(words)),
            "max": max(lens), "min": min(lens), "mean": sum(lens) / float(len(lens))}


def tag_counts(lines, word):
    c = {}
    for s in tagged(lines):
        for w, t in s:
            if w == word:
                c[t] = c.get(t, 0) + 1
    return c


def majority_baseline(train, valid, words):
    """Majority tag per word from train, applied to the ambiguous words of valid."""
    maj = {}
    for w in words:
        c = tag_counts(train, w)
        maj[w] = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    ok = n = 0
    per = {}
    for s in tagged(valid):
        for w, t in s:
            if w in words:
                n += 1
                ok += (maj[w] == t)
                a = per.setdefault(w, [0, 0])
                a[0] += (maj[w] == t)
                a[1] += 1
    return maj, ok, n, per


def window_baseline(train, valid, words):
    """Majority tag per (previous word, word, next word) from train, backing off to the word's
    majority: what a model that only looks at its immediate neighbours can reach."""
    ctx, uni = {}, {}
    for s in tagged(train):
        for i, (w, t) in enumerate(s):
            if w in words:
                key = (s[i - 1][0] if i else "<s>", w, s[i + 1][0] if i + 1 < len(s) else "</s>")
                ctx.setdefault(key, {}).setdefault(t, 0)
                ctx[key][t] += 1
                uni.setdefault(w, {}).setdefault(t, 0)
                uni[w][t] += 1
    best = lambda c: sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    ok = n = 0
    for s in tagged(valid):
        for i, (w, t) in enumerate(s):
            if w in words:
                key = (s[i - 1][0] if i else "<s>", w, s[i + 1][0] if i + 1 < len(s) else "</s>")
                guess = best(ctx[key]) if key in ctx else best(uni[w])
                ok += guess == t
                n += 1
    return ok, n


def bank_distances(lines, classify=False):
    lex = bank_lex()
    hist = {}
    for line in lines:
        text = line.split("\t")[1] if classify else line.split("\t")[0]
        words = text.split(" ")
        d = [i for i, w in enumerate(words) if w in lex][0] - words.index("bank")
        hist[d] = hist.get(d, 0) + 1
    return hist


def fmt_stats_table(task, train, valid, extra_cols=None):
    rows = ["| split | lines | words | vocabulary | min/mean/max words per line |",
            "| --- | --- | --- | --- | --- |"]
    for split, lines in (("train", train), ("valid", valid)):
        s = stats(task, lines)
        rows.append("| %s | %d | %d | %d | %d / %.2f / %d |"
                    % (split, s["lines"], s["words"], s["vocab"], s["min"], s["mean"], s["max"]))
    return "\n".join(rows)


def sample(lines, k):
    return "\n".join(lines[:k])


def readme(out):
    fl_tr, fl_va = out["flies"]
    bk_tr, bk_va = out["bank"]
    bc_tr, bc_va = out["bank_classify"]
    rv_tr, rv_va = out["reverse"]
    lm_tr, lm_va = out["lm"]
    L = []
    A = L.append
    A("# Toy corpora")
    A("")
    A("Generated by `python3 scripts/make_data.py` (Python 3 standard library only; run from any")
    A("directory). Every corpus has its own fixed seed, so a second run writes byte-identical")
    A("files; the script then checks everything it wrote (formats, sizes, no valid sentence in")
    A("train, every valid word seen in train, the rules below) and stops with an assertion if a")
    A("check fails. `python3 scripts/make_data.py --check` regenerates in memory and compares with")
    A("the files on disk without writing. This README is written by the same script: do not edit")
    A("it by hand, edit the script.")
    A("")
    A("| corpus | task | seed | train | valid | max words | tags / labels |")
    A("| --- | --- | --- | --- | --- | --- | --- |")
    tagsets = {"flies": " ".join(FLIES_TAGS), "bank": " ".join(BANK_TAGS),
               "bank_classify": " ".join(BANK_LABELS), "reverse": "a .. p (16 symbols)",
               "lm": "-"}
    for name in ["flies", "bank", "bank_classify", "reverse", "lm"]:
        tr, va = out[name]
        task = TASK[name] if name != "lm" else "lm, mlm"
        mx = max(stats(TASK[name], tr)["max"], stats(TASK[name], va)["max"])
        A("| `data/%s` | %s | %d | %d | %d | %d | %s |" % (name, task, SEEDS[name], len(tr), len(va),
                                                         mx, tagsets[name]))
    A("")
    A("## Formats (the contract with the loader)")
    A("")
    A("UTF-8, one sentence per line, every line ends with `\\n`, no empty lines, no leading or")
    A("trailing spaces, words separated by exactly one ASCII space, no word contains a space or a")
    A("TAB. Words are lowercase ASCII (`[a-z]+`) except the Korean words of `lm` (precomposed Hangul")
    A("syllables, NFC). Every word of a valid file occurs in the train file of the same corpus, so a")
    A("vocabulary built from train covers valid.")
    A("")
    A("- tag (`flies`, `bank`, `reverse`): `w1 w2 ... wn<TAB>t1 t2 ... tn`, one tag per word.")
    A("- classify (`bank_classify`): `LABEL<TAB>w1 w2 ... wn`.")
    A("- lm / mlm (`lm`): `w1 w2 ... wn`.")
    A("")
    A("Sizes below count words (whitespace-separated tokens) and the vocabulary is the number of")
    A("distinct words in that split (tags not included).")
    A("")

    # flies
    maj, ok, n, per = majority_baseline(fl_tr, fl_va, FLIES_AMBIGUOUS)
    wok, wn = window_baseline(fl_tr, fl_va, FLIES_AMBIGUOUS)
    A("## flies: `time flies like an arrow` / `fruit flies like a banana`")
    A("")
    A("**What attention should learn.** Part-of-speech tagging where two words are ambiguous:")
    A("`flies` (N or V) and `like` (P or V). `flies` is a verb after a time-like subject (`time`,")
    A("`life`, `the day`, `an hour`, ...) or a flying thing (`the plane`, `an eagle`), and a noun")
    A("after an insect compound word (`fruit`, `house`, `sand`, `horse`, `crane`, `fire`, ...), a")
    A("determiner or an adjective. `like` is a preposition after a verb (including `flies`/V) and a")
    A("verb after a noun or pronoun subject (including `flies`/N). So to tag `like` right after")
    A("`flies` the model has to look two words back: the position of `like` must attend to the")
    A("subject word before `flies`, which is the attention pattern of the classic example. The")
    A("objects `wind`, `song`, `breeze`, `storm`, `light`, `sunshine`, `music` follow both readings,")
    A("so the object cannot always decide.")
    A("")
    A("**Tag set** (8): `N` noun, `V` verb (also auxiliary `do`), `P` preposition, `D` determiner")
    A("(articles, `my`, `this`, `many`, `most`, `every`, `all` ...), `ADJ`, `ADV` (also `not`),")
    A("`PRON`, `CONJ`. Every word except `flies` and `like` has the same tag everywhere in the")
    A("corpus; every sentence has exactly one tag sequence; the tag of `flies` is a function of the")
    A("word before it; `like` right after `flies` is P exactly when that `flies` is V. The script")
    A("asserts all of this.")
    A("")
    A("**How it was made.** Seven families of templates drawn at random (train / valid lines):")
    A("A `[time-like subject] flies like [object]` flies/V like/P (920 / 138), B `[det] [insect]")
    A("flies like [food]` flies/N like/V (900 / 135), H an A clause and a B clause joined by `and`,")
    A("`but` or `while` (180 / 27), C `like` as a verb after people and animals, including `frogs")
    A("like flies` (500 / 75), D `like` as a preposition after other verbs, `she sings like a")
    A("bird` (500 / 75), E `flies` as a verb elsewhere, `the plane flies over the city`, `the bird")
    A("flies like an arrow`, `time flies when we have fun`, `the pilot flies the plane` (500 / 75),")
    A("F `flies` as a noun elsewhere, `the flies buzz around the kitchen`, `she swats the flies`")
    A("(500 / 75). Optional adverbs, adjectives, openings (`they say`, `but`) and endings vary them.")
    A("")
    A("**Validation.** No validation sentence occurs in train. 12% of the (subject, object) pairs")
    A("of family A and of (insect, object) pairs of family B are held out: they occur only in")
    A("valid (about half of valid's A and B sentences), so valid tests unseen combinations. The")
    A("pair (`time`, `arrow`) and the pair (`fruit`, `banana`) are among them: the probes `time")
    A("flies like an arrow` and `fruit flies like a banana` are in `valid.txt` and not in")
    A("`train.txt`, and no training sentence pairs `time` with `arrow` or `fruit` with `banana`.")
    A("")
    A(fmt_stats_table("tag", fl_tr, fl_va))
    A("")
    A("**Ambiguous words** (for `data.ambiguous` / `valid_acc_ambiguous`): `flies`, `like`.")
    A("")
    A("| word | train tags | valid tags | majority tag (train) | majority accuracy on valid |")
    A("| --- | --- | --- | --- | --- |")
    for w in FLIES_AMBIGUOUS:
        ct, cv = tag_counts(fl_tr, w), tag_counts(fl_va, w)
        A("| `%s` | %s | %s | %s | %d / %d = %.3f |" % (
            w, ", ".join("%s %d" % kv for kv in sorted(ct.items())),
            ", ".join("%s %d" % kv for kv in sorted(cv.items())), maj[w], per[w][0], per[w][1],
            per[w][0] / float(per[w][1])))
    A("")
    A("Majority-tag-per-word baseline on the ambiguous words of valid (`flies` and `like`")
    A("together): **%d / %d = %.3f**. Since every other word has a single tag, the same baseline"
      % (ok, n, ok / float(n)))
    tot = sum(len(s) for s in tagged(fl_va))
    A("scores %.3f over all %d valid tokens. A model that sees only the previous and the next" % (
        (tot - n + ok) / float(tot), tot))
    A("word (majority tag per (previous, word, next) in train, backing off to the word) gets")
    A("%d / %d = %.3f on the ambiguous words: `flies` is decided by its left neighbour, but `like`" % (
        wok, wn, wok / float(wn)))
    A("after `flies` needs the word two positions back.")
    A("")
    A("Samples (valid):")
    A("")
    A("```")
    A(sample(fl_va, 6))
    A("```")
    A("")

    # bank
    A("## bank: the sense of `bank`")
    A("")
    A("**What attention should learn.** Tag `bank` RIVER or MONEY and every other word O. Each")
    A("sentence contains `bank` once and exactly one *decider* word, 1 to 6 positions before or")
    A("after it; every other word is neutral: the script asserts that each non-decider word of")
    A("train occurs in both RIVER and MONEY sentences, so the decider is the only evidence and")
    A("`bank` has to attend to it across the filler words.")
    A("")
    lex = bank_lex()
    for lab in BANK_LABELS:
        ws = sorted(w for w in lex if lex[w] == lab)
        A("- %s deciders (%d): %s." % (lab, len(ws), ", ".join("`%s`" % w for w in ws)))
    A("")
    A("**How it was made.** %d sentence frames (`we talked about the {X} near the old bank`," % len(BANK_FRAMES))
    A("`at the {DA} old bank she waited`, `the bank {DV3} every year`, ...) filled with a random")
    A("subject, 0 to 2 neutral adjectives before `bank`, an optional time phrase, and one decider")
    A("of the sentence's sense (drawn 50/50); sentences whose decider is more than 6 words from")
    A("`bank` or that are longer than 16 words are drawn again. 8% of the (frame, decider word)")
    A("combinations are held out and make up half of valid (unseen combinations); no validation")
    A("sentence occurs in train.")
    A("")
    A("**Tag set** (3): `O`, `RIVER`, `MONEY` (RIVER/MONEY only on `bank`).")
    A("")
    A(fmt_stats_table("tag", bk_tr, bk_va))
    A("")
    for split, lines in (("train", bk_tr), ("valid", bk_va)):
        h = bank_distances(lines)
        adj = h.get(1, 0) + h.get(-1, 0)
        A("Decider offset from `bank` in %s (negative = before): %s; adjacent %d (%.0f%%), not "
          "adjacent %d (%.0f%%)." % (split, ", ".join("%+d: %d" % (d, h[d]) for d in sorted(h)),
                                     adj, 100.0 * adj / len(lines), len(lines) - adj,
                                     100.0 * (len(lines) - adj) / len(lines)))
        A("")
    maj, ok, n, per = majority_baseline(bk_tr, bk_va, ["bank"])
    wok, wn = window_baseline(bk_tr, bk_va, ["bank"])
    ct, cv = tag_counts(bk_tr, "bank"), tag_counts(bk_va, "bank")
    A("**Ambiguous word**: `bank`. Train: %s; valid: %s. Majority tag (train): %s; majority" % (
        ", ".join("%s %d" % kv for kv in sorted(ct.items())),
        ", ".join("%s %d" % kv for kv in sorted(cv.items())), maj["bank"]))
    A("baseline on `bank` in valid: **%d / %d = %.3f** (all valid tokens: %.3f, since every other" % (
        ok, n, ok / float(n), (stats("tag", bk_va)["words"] - n + ok) / float(stats("tag", bk_va)["words"])))
    A("word is O). The previous-word/next-word baseline (as for flies) gets %d / %d = %.3f: the" % (
        wok, wn, wok / float(wn)))
    A("neighbours decide only when the decider is adjacent.")
    A("")
    A("Samples (valid):")
    A("")
    A("```")
    A(sample(bk_va, 6))
    A("```")
    A("")

    # bank_classify
    A("## bank_classify: the sense of `bank`, one label per sentence")
    A("")
    A("**What attention should learn.** The same kind of sentences as `bank` (same frames and")
    A("words, drawn separately with seed %d, so the sentences differ), labelled RIVER or MONEY per" % SEEDS["bank_classify"])
    A("sentence: the pooled representation has to carry the decider word. No validation sentence")
    A("occurs in train.")
    A("")
    A("**Labels** (2): `RIVER`, `MONEY`.")
    A("")
    A(fmt_stats_table("classify", bc_tr, bc_va))
    A("")
    for split, lines in (("train", bc_tr), ("valid", bc_va)):
        c = {}
        for l in lines:
            lab = l.split("\t")[0]
            c[lab] = c.get(lab, 0) + 1
        A("- %s labels: %s." % (split, ", ".join("%s %d" % kv for kv in sorted(c.items()))))
    c = {}
    for l in bc_tr:
        c[l.split("\t")[0]] = c.get(l.split("\t")[0], 0) + 1
    majl = sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    okc = sum(1 for l in bc_va if l.split("\t")[0] == majl)
    A("- Majority-label baseline (train majority %s) on valid: %d / %d = %.3f." % (
        majl, okc, len(bc_va), okc / float(len(bc_va))))
    A("")
    A("Samples (valid):")
    A("")
    A("```")
    A(sample(bc_va, 4))
    A("```")
    A("")

    # reverse
    A("## reverse: a pure attention-routing task")
    A("")
    A("**What attention should learn.** Each line is 4 to 12 symbols drawn uniformly from the 16")
    A("symbols `a` .. `p`; the tag at position i is the token at position n-1-i (n = the line's")
    A("length). Nothing about a token's own identity helps: position i must attend to position")
    A("n-1-i, an anti-diagonal attention map that depends on the length (so on the padding).")
    A("Lengths are uniform in 4..12; duplicates are drawn again; no validation line occurs in train.")
    A("")
    A("**Tag set** (16): the symbols `a` .. `p` themselves.")
    A("")
    A(fmt_stats_table("tag", rv_tr, rv_va))
    A("")
    okr = nr = 0
    for s in tagged(rv_va):
        for w, t in s:
            okr += w == t
            nr += 1
    A("Copy baseline (tag = the token itself) on valid: %d / %d = %.3f (middle tokens of odd" % (
        okr, nr, okr / float(nr)))
    A("lines and chance agreements); majority tag per word would be about 1/16.")
    A("")
    A("Samples (valid):")
    A("")
    A("```")
    A(sample(rv_va, 3))
    A("```")
    A("")

    # lm
    n_ko_tr = sum(1 for l in lm_tr if is_korean(l.split(" ")[0]))
    n_ko_va = sum(1 for l in lm_va if is_korean(l.split(" ")[0]))
    ko_vocab = set(w for l in lm_tr for w in l.split(" ") if is_korean(w))
    en_vocab = set(w for l in lm_tr for w in l.split(" ") if not is_korean(w))
    A("## lm: Korean and English sentences for causal LM and MLM")
    A("")
    A("**What attention should learn.** Next-word (task `lm`, causal mask) or masked-word (task")
    A("`mlm`) prediction on simple template sentences, half Korean, half English, in random order.")
    A("Agreement makes earlier words matter: in Korean the particle form depends on the noun")
    A("(이/가, 을/를, 은/는, 과/와, (으)로 chosen from the final consonant of the noun's last")
    A("syllable, computed from its code point: (code - 0xAC00) % 28 != 0 means a final consonant,")
    A("and (으)로 takes 로 after a vowel or ㄹ), and the verb depends on the object")
    A("(생선을 먹는다, 책을 읽는다, 물을 마신다); in English the verb agrees with the subject")
    A("(`the cat eats` / `the cats eat`), a/an with the next word, and objects fit their verbs.")
    A("Each line is one language only; no validation line occurs in train.")
    A("")
    A("Korean templates: `[time] S이/가 [adv] O을/를 V`, `S은/는 [time] PLACE에 간다/온다`,")
    A("`S와/과 S2이/가 [adv] O을/를 V`, `S이/가 [time] PLACE에서 O을/를 V`, `S은/는 [adj] O을/를")
    A("좋아한다`, `S은/는 [time] PLACE(으)로 간다/온다`. Words are space-separated eojeols (noun")
    A("plus particle is one word, as written). English templates: `S V O [time | in PLACE]`,")
    A("`S goes to PLACE [time]`, `S likes O`, `S V [in PLACE | time]`, `S is [very] ADJ`.")
    A("")
    A(fmt_stats_table("lm", lm_tr, lm_va))
    A("")
    A("- Korean lines: train %d, valid %d; English lines: train %d, valid %d." % (
        n_ko_tr, n_ko_va, len(lm_tr) - n_ko_tr, len(lm_va) - n_ko_va))
    A("- Train vocabulary: %d Korean words, %d English words; 3 to 10 words per line." % (
        len(ko_vocab), len(en_vocab)))
    A("")
    A("Samples (valid):")
    A("")
    A("```")
    A(sample(lm_va, 6))
    A("```")
    A("")
    return "\n".join(L)


# ----------------------------------------------------------------------------------------------
# main

def generate():
    """-> (dict corpus -> (train lines, valid lines), dict relative path -> bytes)."""
    out = {}
    fl_tr, fl_va, _ = make_flies()
    out["flies"] = (fl_tr, fl_va)
    bk_tr, bk_va, _ = make_bank()
    out["bank"] = (bk_tr, bk_va)
    out["bank_classify"] = make_bank_classify()
    out["reverse"] = make_reverse()
    out["lm"] = make_lm()
    files = {}
    for name in ["flies", "bank", "bank_classify", "reverse", "lm"]:
        tr, va = out[name]
        files["%s/train.txt" % name] = ("\n".join(tr) + "\n").encode("utf-8")
        files["%s/valid.txt" % name] = ("\n".join(va) + "\n").encode("utf-8")
    files["README.md"] = readme(out).encode("utf-8")
    return out, files


def check_files(files):
    """Parse every file back from bytes (strict UTF-8) and run every check on it."""
    parsed = {}
    for name in ["flies", "bank", "bank_classify", "reverse", "lm"]:
        sp = []
        for split in ("train", "valid"):
            raw = files["%s/%s.txt" % (name, split)]
            text = raw.decode("utf-8", errors="strict")
            assert text.endswith("\n") and not text.endswith("\n\n"), name
            assert "\r" not in text and "\ufeff" not in text, name
            sp.append(text[:-1].split("\n"))
        check_corpus(name, sp[0], sp[1])
        parsed[name] = sp
    check_flies(*parsed["flies"])
    check_bank(*parsed["bank"])
    check_bank(*parsed["bank_classify"], classify=True)
    check_lm(*parsed["lm"])
    # bank_classify is a different draw than bank
    assert parsed["bank"][0][0].split("\t")[0] != parsed["bank_classify"][0][0].split("\t")[1]
    files["README.md"].decode("utf-8", errors="strict")


def main(argv):
    check_only = "--check" in argv[1:]
    _, files = generate()
    _, files2 = generate()
    assert files == files2, "generation is not deterministic"
    check_files(files)
    if check_only:
        bad = []
        for rel, data in sorted(files.items()):
            path = os.path.join(DATA, rel)
            if not os.path.exists(path) or open(path, "rb").read() != data:
                bad.append(rel)
        if bad:
            print("differs from the generator: %s" % ", ".join(bad), file=sys.stderr)
            return 1
        print("data/ matches the generator; all checks passed")
        return 0
    for rel, data in sorted(files.items()):
        path = os.path.join(DATA, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    # read back what is on disk and check it again
    ondisk = {rel: open(os.path.join(DATA, rel), "rb").read() for rel in files}
    assert ondisk == files
    check_files(ondisk)
    for rel in sorted(files):
        print("%-26s %8d bytes  sha256 %s" % ("data/" + rel, len(files[rel]),
                                              hashlib.sha256(files[rel]).hexdigest()[:16]))
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
