"""Deterministic, rule-based extraction of PEC2F records from raw turns.

:class:`RuleExtractor` turns each :class:`~langmem_cog.records.Turn` into one
:class:`~langmem_cog.graph.schema.Extraction` with regular expressions, small
lexicons and VADER sentiment. It needs no model and no network, is deterministic
(the same turns give equal extractions) and fast (thousands of turns per second
on one core), so it can index every turn of a long conversation and serve as
the fallback of the LLM extractor.

Example:
    >>> from datetime import datetime, timezone
    >>> from langmem_cog.records import Turn
    >>> ts = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    >>> turn = Turn(id="D1:3", namespace="demo", speaker="Caroline", timestamp=ts,
    ...             text="I went to a support group yesterday. I think it was amazing!")
    >>> ex = RuleExtractor().extract([turn])[0]
    >>> ev = ex.events[0]
    >>> ev.text, ev.verb, ev.participants, ev.start.date().isoformat(), ev.time_text
    ('went to a support group', 'go', ('Caroline',), '2023-05-07', 'yesterday')
    >>> [(c.source, c.target, c.predicate, c.polarity) for c in ex.claims]
    [('Caroline', 'support group', 'opinion', 1)]
    >>> is_chitchat("Thanks, Melanie!")
    True

Rules in brief:

* **Chit-chat** (greetings, thanks, farewells, bare reactions such as "Wow, that's
  great!") gives an empty extraction; see :func:`is_chitchat`.
* **Persons** (``Extraction.persons``) are the people *mentioned* in the turn other
  than its speaker. The speaker is ``Extraction.speaker`` and is always a Person; it
  is left out of ``persons`` so that ``Extraction.empty`` stays meaningful. A person
  is a known name (speakers, ``known_people``, names introduced as "my friend Josh"
  or "his name is Kyle"), a capitalised word that is not at the start of a sentence
  and not read otherwise, or a capitalised word at a sentence start followed by a
  verb of people ("Doug started ...", "Anna said ...", "Jon and I ..."). Not persons:
  a stoplist of common capitalised words (I, days, months, OMG, God, ...), places
  (after "in/at/to/from ..." or in a small gazetteer of countries, states and big
  cities), nationalities, acronyms, brands, names after an article ("the Prius"),
  and pets (learned from "my dog Luna", "a cat named Oliver", "Oscar, my guinea
  pig", and "her name is Coco" near a pet word); pet names are concepts of kind
  ``thing``. A unique prefix of a speaker's name is that speaker ("Mel" ->
  "Melanie"). Kin without a name become ``"<owner>'s <relation>"``: "my mom" said by
  Melanie is ``"Melanie's mom"``, "your sister" said to Melanie is ``"Melanie's
  sister"`` (mum/mother -> mom, father -> dad, children -> kids, ...); a name given
  with the relation wins ("my friend Josh" is ``"Josh"``). The *addressee* of a turn
  is the nearest other speaker of its conversation in the batch (before it, else
  after it): "you" in a claim and "your mom" refer to them.
* **Concepts** are lower-cased, trimmed names: capitalised multi-word names
  ("little fern"), quoted titles, hobbies and activities from a lexicon
  ("running", "pottery"), holidays, places, and the noun phrase after activity and
  preference verbs ("went to *the farmers market*", "love *hiking*", "adopted *a
  puppy*"). Articles and evaluative adjectives are dropped ("an awesome trip" ->
  "trip"). Kinds: ``place``, ``organization``, ``thing``, ``topic``, ``activity``,
  ``work``. When a turn with content yields nothing else, up to two noun phrases
  after a determiner (else its longest run of content words) are kept as
  ``topic`` concepts, so that content-bearing turns are represented in the graph.
* **Events** are first-person past, perfect, future and (with a time expression)
  present-progressive clauses: "I went ...", "we adopted ...", "I'm going to ...",
  "I've finished ...", "Next month I'm having ...", a sentence opening on a past
  verb ("Lost my job yesterday."), and "my X <past verb>" ("my son broke his arm":
  the participant is ``"<speaker>'s son"``; "my car broke down": the speaker). No
  event for negations, wishes ("I want to ..."), questions, states ("I felt",
  "I loved", ...), subordinate clauses ("since we last talked", "if I go"), or an
  ambiguous past ("I read", "I had") without a time expression. One event per
  subject-verb clause. The time is the first time expression of the clause, else
  the last one before it in its sentence ("Yesterday, I ..."), resolved with
  :func:`~langmem_cog.timeparse.resolve_time_expressions` against the turn's
  timestamp; with none, ``start``/``end`` stay ``None`` (the graph store falls back to
  the turn's timestamp). Participants: the speaker first (or the kin subject), then
  the persons named in the clause ("my kids and I" adds ``"<speaker>'s kids"``; "we"
  adds nobody; an addressed "..., Caroline!" is not a participant). ``verb`` is a
  lemma from an irregular-verb table and suffix rules.
* **Facts** (subject: the speaker): job (``works_as``: "I work as a nurse", "I'm a
  chemistry teacher"; ``works_at``), ``allergic_to``, ``favorite`` ("my favorite book
  is Dune", "X is my favorite"), pets (``has``: "dog named Bailey"), ``lives_in``,
  ``from``, ``plays``, habits (``habit``: "I usually ...", "I've been painting for
  seven years", "I ... every week"), status (``is``: married, vegan, ...) and generic
  preferences (``likes`` / ``dislikes``). ``valid_from`` is the time expression of the
  fact's sentence, if any.
* **Claims** -- the decision between Fact and Claim: a preference verb (love, like,
  enjoy, hate, can't stand, ...) about a *generic* thing or activity ("I love
  running", "I hate crowds", "I love painting landscapes") gives both a Fact
  (``likes``/``dislikes``: the stable preference, for factual questions) and a Claim
  with predicate ``preference`` (the dated, polarised statement that reconciliation
  can supersede: "I hate running" then "I love running now"). About a *specific*
  thing, person or work ("I love that café", "I loved the movie", "I love you") it
  is an evaluation: a Claim with predicate ``opinion`` and no Fact ("I love that
  café" is borderline; the demonstrative makes it an evaluation). Opinion frames ("I
  think", "I believe", "I feel like", "in my opinion", "I'm sure", "I bet") give
  ``opinion`` when the embedded clause has an evaluative adjective, else ``belief``
  ("I believe the store closes at nine"). Evaluative predications ("that film is
  overrated", "the manager is unfair", "you're amazing", "What a beautiful
  painting!", "I'm so proud of you") give ``opinion``. Reported opinions ("Mom
  thinks ...", "my sister loves ...", "Josh says ...") are attributed to that person,
  not the speaker (and give no Fact). Questions give no claim. The target is the
  evaluated subject ("It's great *to* X" / "*how* X": X), the object of the
  preference verb, a named person, or, for pronouns, best effort: "you" is the
  addressee; "it"/"that"/"they" the last concept named before in the turn, else the
  previous turn's first concept; "he"/"she" the last person (or pet) named. A claim
  whose target cannot be resolved, or is its own source, is dropped; at most one
  claim per clause. Targets that are not persons and are named in the turn are
  added to its concepts. ``content`` is the sentence. Polarity is VADER's compound
  score on the clause (>= 0.05: +1, <= -0.05: -1, else 0); where VADER is neutral,
  or contradicts an explicit preference verb ("I can't stand X" scores 0), the
  lexical polarity of the verb or adjective is used and ``sentiment`` is +-0.5.

The time resolver is skipped for text that contains none of the keys its own rules
need (read from :mod:`langmem_cog.timeparse`), which roughly halves the time spent
on turns without dates.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from langmem_cog.errors import InvalidInputError
from langmem_cog.graph.schema import (
    ExtractedClaim,
    ExtractedConcept,
    ExtractedEvent,
    ExtractedFact,
    Extraction,
)
from langmem_cog.records import Turn
from langmem_cog.timeparse import TimeMention, resolve_time_expressions

__all__ = ["RuleExtractor", "is_chitchat"]

logger = logging.getLogger(__name__)

_I = re.IGNORECASE


def _words(s: str) -> frozenset[str]:
    return frozenset(s.split())


def _alt(words: Iterable[str]) -> str:
    """A regex alternation of ``words`` (longest first, spaces match any whitespace)."""
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(set(words), key=lambda w: (-len(w), w)))


# =========================================================================== lexicons

_CHITCHAT_WORDS = _words(
    """hi hii hey heya hello hiya yo howdy sup morning evening afternoon night good gn gm
    thanks thank thx ty you u so much very lot lots a bunch tons again too as well for it
    bye goodbye byee cya see ya later soon then talk ttyl take care catch cheers
    ok okay k kk alright all right sure yes yeah yep yup ya yea no nope nah of course
    cool nice great awesome amazing wow oh ah aw aww awww omg lol haha hahaha hehe lmao
    sweet wonderful fantastic perfect lovely fab neat super glad happy totally definitely
    absolutely exactly true indeed same agreed right deal welcome np problem worries
    that's thats that is it's its this sounds sound looks look like fun really just
    mine me too appreciate appreciated it means means my dear friend buddy pal mate
    have nice day weekend one rest congrats congratulations well done keep up the work
    and will do"""
)

# Capitalised words that never name a person or concept on their own (checked lower-cased).
_COMMON = _words(
    """i i'm i've i'll i'd im ive me my mine myself we we're we've we'll we'd us our ours
    you you're you've you'll you'd your yours he he's she she's it it's its they they're
    they've their them his her hers him this that that's these those there there's here
    here's what what's who who's whom whose which when where why how whatever whenever
    a an the and or but so if because though although since while as than then yet also
    just only even still too very really quite pretty super so such much many more most
    some any every each all both either neither no not none nothing something anything
    everything someone anyone everyone somebody anybody everybody nobody
    is are was were be been being am do does did done have has had having can could will
    would shall should may might must let let's lets
    to of in on at by for with from about into onto over under after before during
    through between among around up down out off again once
    hi hello hey hiya yo wow oh ah aw aww ooh omg lol haha hahaha hehe yay yeah yes yep
    yup no nope nah ok okay alright well hmm um uh sure thanks thank please sorry oops
    ugh whoa woah bye goodbye congrats congratulations cheers welcome dear
    good great nice cool awesome amazing wonderful fantastic lovely sweet glad happy sad
    bad best better new old big small first last next another other same own
    today tomorrow yesterday tonight now later soon recently lately currently always
    never often sometimes usually maybe perhaps probably definitely absolutely totally
    actually honestly seriously literally basically anyway btw also plus anyways
    monday tuesday wednesday thursday friday saturday sunday january february march
    april may june july august september october november december
    mon tue tues wed thu thur thurs fri sat sun jan feb mar apr jun jul aug sep sept oct
    nov dec morning afternoon evening night weekend week month year
    god lord jesus gosh geez jeez dang damn heck tv ps pps btw fyi imo imho idk tbh lmao
    rofl ttyl brb asap aka etc mr mrs ms dr st sir madam ma'am
    guess speaking talking looking thinking feeling going getting making doing trying
    yesterday's today's tomorrow's one two three four five six seven eight nine ten
    love like enjoy hate wish hope think know feel see look check take make get go got
    went had made took saw came keep kept been said tell told ask asked""")

# Capitalised words that end a capitalised name and are never part of one.
_CAP_BREAK = _words(
    """i i'm i've i'll i'd im ive monday tuesday wednesday thursday friday saturday sunday january
    february march april june july august september october november december hi hello hey hiya
    yo wow oh ah omg lol haha thanks thank ok okay yes yeah yay yep btw god bye congrats
    congratulations sorry please dear mr mrs ms dr mr. mrs. ms. dr. fyi tbh imo idk ps""")

# Relatives and roles that name one person when owned ("my mom" -> "Melanie's mom").
_KIN_NORMAL = {
    "mom": "mom", "mum": "mom", "mother": "mom", "mommy": "mom", "mama": "mom", "ma": "mom",
    "dad": "dad", "father": "dad", "daddy": "dad", "papa": "dad", "pa": "dad",
    "parents": "parents", "sister": "sister", "sis": "sister", "sisters": "sisters",
    "brother": "brother", "bro": "brother", "brothers": "brothers", "son": "son", "sons": "sons",
    "daughter": "daughter", "daughters": "daughters", "kids": "kids", "children": "kids",
    "kiddos": "kids", "kid": "kid", "child": "kid", "husband": "husband", "hubby": "husband",
    "wife": "wife", "partner": "partner", "spouse": "spouse", "boyfriend": "boyfriend",
    "girlfriend": "girlfriend", "bf": "boyfriend", "gf": "girlfriend", "fiance": "fiance",
    "fiancé": "fiance", "fiancee": "fiancee", "fiancée": "fiancee", "grandma": "grandma",
    "grandmother": "grandma", "granny": "grandma", "nana": "grandma", "grandpa": "grandpa",
    "grandfather": "grandpa", "grandparents": "grandparents", "aunt": "aunt", "auntie": "aunt",
    "uncle": "uncle", "cousin": "cousin", "niece": "niece", "nephew": "nephew",
    "stepmom": "stepmom", "stepdad": "stepdad", "stepson": "stepson", "stepdaughter": "stepdaughter",
    "boss": "boss", "manager": "manager", "coach": "coach", "mentor": "mentor",
    "therapist": "therapist", "roommate": "roommate", "landlord": "landlord",
    "grandson": "grandson", "granddaughter": "granddaughter", "grandkids": "grandkids",
    "grandchildren": "grandkids", "in-laws": "in-laws", "baby": "baby",
}  # fmt: skip
# Relations that only name a person together with a name ("my friend Josh").
_NAMED_ONLY = _words(
    "friend friends buddy buddies pal bestie bff colleague colleagues coworker coworkers co-worker "
    "neighbor neighbour teammate teammates classmate classmates student students teacher doctor "
    "dog cat puppy kitten pet"
)
_KIN_MOD = r"(?:(?:little|big|older|younger|baby|best|oldest|youngest|eldest|late|dear|twin|new|old|other|two|three|sweet|lovely)\s+){0,2}"
_KIN_RE = re.compile(
    rf"\b(?P<own>my|our|your)\s+{_KIN_MOD}(?P<rel>{_alt(list(_KIN_NORMAL) + list(_NAMED_ONLY))})\b"
    r"(?:,?\s+(?P<name>(?-i:[A-Z][a-z]+))(?!\s*(?-i:[A-Z])))?",
    _I,
)
_OWNERS = _words("my our your")
_RELATIONS = frozenset(_KIN_NORMAL) | _NAMED_ONLY
_POSS_KIN_RE = re.compile(rf"\b(?P<name>(?-i:[A-Z][a-z]+))'s\s+{_KIN_MOD}(?P<rel>{_alt(_KIN_NORMAL)})\b", _I)
# Capitalised kin used as a name ("Mom thinks ...").
_CAP_KIN = {"Mom": "mom", "Mum": "mom", "Mommy": "mom", "Mama": "mom", "Dad": "dad", "Daddy": "dad",
            "Papa": "dad", "Grandma": "grandma", "Grandpa": "grandpa", "Nana": "grandma", "Granny": "grandma"}  # fmt: skip

_PETS = _words(
    "dog dogs puppy puppies pup pups cat cats kitten kittens kitty turtle turtles tortoise snake "
    "snakes bird birds parrot parrots hamster hamsters rabbit rabbits bunny bunnies fish goldfish "
    "horse horses pony guinea-pig lizard lizards gecko ferret ferrets chicken chickens pig pigs goat goats pet pets "
    "fur-baby furbaby fur-babies critter critters pooch pooches doggo pupper"
)
_PET_ALT = _alt(_PETS)
_PET_NAMED_RE = re.compile(
    rf"\b(?:(?P<own>my|our)\s+(?:\w+\s+)?(?P<pet>{_PET_ALT})|(?:a|an|two|three|\d+)\s+(?:\w+\s+)?(?P<pet2>{_PET_ALT}))"
    r",?\s+(?:(?:named|called)\s+)?(?P<name>(?-i:[A-Z][a-z]+))(?:\s+and\s+(?P<name2>(?-i:[A-Z][a-z]+)))?",
    _I,
)
#: Words that put a conversation on pets (names given nearby are pet names).
_PET_CUES = _PETS | _words("collar collars leash leashes vet vets paw paws fur furry bark barking meow litter kennel")
_NAME_COMMA_PET_RE = re.compile(rf"(?P<name>\b(?-i:[A-Z][a-z]+)),\s+(?:my|our)\s+(?:\w+\s+)?(?:{_PET_ALT})\b", _I)
_NAME_IS_RE = re.compile(
    r"\b(?:(?:his|her|their|its|the|pet's|dog's|cat's)\s+names?\s*(?:'s|is|are|was|were)|named\s+(?:him|her|it|them)"
    r"|(?:this|that)\s+is|meet)\s+(?P<names>(?-i:[A-Z][a-z]+)(?:(?:,\s*|,?\s+and\s+)(?-i:[A-Z][a-z]+))*)",
    _I,
)
_CAP_NAME_RE = re.compile(r"[A-Z][a-z]+")
_HAVE_PET_RE = re.compile(
    rf"\b(?:i|we)\s+(?:also\s+|now\s+|just\s+|still\s+)?(?:have|got|own|adopted|'ve\s+got|have\s+got|'ve\s+adopted)\s+"
    rf"(?P<num>a|an|one|two|three|four|five|some|\d+)\s+(?:(?:new|little|cute|rescue|baby|pet|adorable)\s+)?(?P<pet>{_PET_ALT})\b"
    r"(?:,?\s+(?:named|called)\s+(?P<name>(?-i:[A-Z][a-z]+)))?",
    _I,
)

_NATIONALITIES = _words(
    """american canadian mexican british english french german italian spanish portuguese
    irish scottish welsh dutch swedish norwegian danish finnish russian polish greek turkish
    chinese japanese korean thai vietnamese indian pakistani filipino indonesian australian
    brazilian argentinian colombian peruvian cuban african nigerian kenyan egyptian moroccan
    ethiopian asian european latin latino latina hispanic arab arabic persian israeli jewish
    hawaiian caribbean jamaican christian catholic muslim buddhist hindu native mediterranean
    nordic korean-american"""
)
# Countries, US states and large cities: single capitalised words that are places without a cue.
_PLACES = _words(
    """afghanistan albania algeria argentina armenia australia austria bahamas bangladesh belgium bolivia bosnia
    brazil bulgaria cambodia cameroon canada chile china colombia croatia cuba cyprus czechia denmark ecuador
    egypt england estonia ethiopia fiji finland france georgia germany ghana greece guatemala haiti honduras
    hungary iceland india indonesia iran iraq ireland israel italy jamaica japan jordan kazakhstan kenya korea
    kuwait laos latvia lebanon libya lithuania luxembourg madagascar malaysia maldives mali malta mexico monaco
    mongolia morocco mozambique myanmar nepal netherlands holland nicaragua nigeria norway pakistan panama
    paraguay peru philippines poland portugal qatar romania russia rwanda scotland senegal serbia singapore
    slovakia slovenia somalia spain sudan sweden switzerland syria taiwan tanzania thailand tunisia turkey
    uganda ukraine uruguay uzbekistan venezuela vietnam wales yemen zambia zimbabwe africa asia europe
    antarctica america scandinavia caribbean bali hawaii alaska california texas florida ohio oregon nevada
    arizona utah colorado montana idaho wyoming washington michigan illinois indiana iowa kansas kentucky
    tennessee alabama mississippi louisiana arkansas oklahoma missouri nebraska minnesota wisconsin virginia
    carolina pennsylvania maryland delaware jersey connecticut massachusetts vermont maine manhattan brooklyn
    london paris rome berlin madrid barcelona lisbon amsterdam vienna prague budapest athens dublin edinburgh
    glasgow galway oslo stockholm copenhagen helsinki moscow istanbul dubai cairo tokyo kyoto osaka seoul
    beijing shanghai bangkok delhi mumbai sydney melbourne toronto vancouver montreal quebec chicago boston
    seattle portland denver austin dallas houston miami orlando atlanta nashville detroit phoenix vegas
    philadelphia pittsburgh baltimore sacramento oakland cleveland minneapolis milwaukee honolulu anchorage
    stamford banff tuscany venice florence milan naples munich zurich geneva brussels prague krakow warsaw
    reykjavik havana lima bogota santiago cancun rio"""
)
_PLACE_ACRONYMS = _words("usa us uk nyc la sf dc eu uae nz")
_BRANDS = _words(
    """instagram facebook twitter tiktok youtube snapchat reddit linkedin pinterest netflix hulu
    spotify amazon google apple iphone ipad android samsung microsoft xbox playstation nintendo
    switch steam zoom uber lyft airbnb starbucks mcdonald's walmart target costco ikea etsy ebay
    lego disney marvel pixar nike adidas tesla toyota honda ford bmw audi jeep fortnite minecraft
    zelda pokemon pokémon mario overwatch valorant wii kindle fitbit peloton whatsapp discord
    twitch chatgpt photoshop"""
)
_HOLIDAY_RE = re.compile(
    r"\b(christmas|thanksgiving|halloween|easter|hanukkah|diwali|ramadan|eid|new\s+year(?:'s)?(?:\s+eve)?|"
    r"valentine(?:'s)?(?:\s+day)?|fourth\s+of\s+july|4th\s+of\s+july|independence\s+day|mother's\s+day|"
    r"father's\s+day|pride(?:\s+(?:month|parade|event|march))?|black\s+friday|st\.?\s+patrick's\s+day|"
    r"passover|lunar\s+new\s+year|birthday)\b",
    _I,
)

# Hobbies and activities (kind "activity").
_ACTIVITIES = """running jogging painting drawing sketching climbing bouldering rock_climbing pottery
    ceramics camping hiking swimming surfing skiing snowboarding skating ice_skating skateboarding
    yoga meditation pilates guitar piano violin cello drums ukulele saxophone flute singing dancing
    ballet salsa cooking baking gardening reading writing journaling photography fishing cycling
    biking mountain_biking mountain_climbing kayaking canoeing sailing rowing knitting crochet crocheting sewing
    quilting embroidery gaming video_games board_games chess tennis soccer football basketball
    baseball volleyball softball golf boxing kickboxing martial_arts karate judo taekwondo
    jiu-jitsu crossfit weightlifting weight_lifting marathon half_marathon triathlon 10k
    5k traveling travelling volunteering poetry calligraphy sculpting woodworking
    horse_riding horseback_riding archery scuba_diving snorkeling birdwatching
    bird_watching stargazing thrifting djing rapping songwriting composing
    acting improv stand-up_comedy cosplay scrapbooking origami jigsaw_puzzles hockey rugby
    cricket badminton ping_pong table_tennis bowling darts lacrosse fencing parkour wrestling
    sprinting road_trips road_trip beach_volleyball playing_music making_music painting_classes
    cooking_classes dance_classes volunteer_work charity_work fundraising blogging vlogging
    streaming programming coding workouts working_out exercising fitness pickleball frisbee
    paddleboarding kitesurfing glamping backpacking mountaineering trail_running dance music art
    theater theatre"""
_ACTIVITY_SET = frozenset(w.replace("_", " ") for w in _ACTIVITIES.split())

# Words that head a place or an organisation in a capitalised name.
_PLACE_HEADS = _words(
    """park lake beach mountain mountains mount mt city town village street st avenue ave road rd
    river island islands canyon valley falls bay county state states forest trail trails coast
    cafe café restaurant bar pub bistro diner bakery hotel inn resort mall market square plaza
    hospital airport station zoo garden gardens museum gallery theater theatre stadium arena
    center centre library church temple cathedral castle palace tower bridge harbor harbour
    reef desert springs hills hill peak national heights gym studio hall farm ranch lodge
    country kingdom republic province district"""
)
_ORG_HEADS = _words(
    """university college school academy institute club company inc corp corporation ltd llc
    foundation association society team group organization organisation org council department
    agency bank network band league federation union committee charity shelter ministry
    studios records press magazine news times church"""
)
# Words right before a capitalised name that make it a place ("in Paris", "went to Banff", "from Ohio").
_LOC_PREV = _words(
    "in at on near around across outside toward towards visit visited visiting visits explore explored exploring into"
)
_MOTION_TO = _words(
    """went go goes going gone been moved move moving flew fly flying drove drive driving trip trips traveled
    travelled traveling travelling travel headed heading head vacation holiday back came come coming way
    relocated returned return returning honeymoon ticket tickets flight flights drive road hike"""
)
_BE_FROM = _words("'m am is are was were come came comes moved originally back way i'm he's she's we're they're")
# Words right before a capitalised name that make it a work ("watched Inception", "the book Dune").
_WORK_PREV = _words(
    """read reading reads watch watched watching watches saw seen see called titled named book books novel movie
    movies film films show shows series song songs album albums game games play poem documentary podcast episode"""
)


def _is_place_context(before: str) -> bool:
    """Whether the text right before a name makes it a place."""
    prev = before.lower().split()[-3:]
    if not prev:
        return False
    last = prev[-1]
    if last in _LOC_PREV:
        return True
    return len(prev) >= 2 and (last == "to" and prev[-2] in _MOTION_TO or last == "from" and prev[-2] in _BE_FROM)


def _is_work_context(before: str) -> bool:
    """Whether the text right before a name makes it a title."""
    prev = before.lower().split()[-3:]
    if not prev:
        return False
    if prev[-1] == "the" and len(prev) >= 2:
        prev = prev[:-1]
    return prev[-1] in _WORK_PREV or (prev[-1] == "to" and len(prev) >= 2 and prev[-2].startswith("listen"))


# Evaluative adjectives with their lexical polarity (used when VADER is neutral).
_EVAL = {
    **dict.fromkeys(
        sorted(_words(
        """amazing awesome beautiful brilliant cool cute delicious excellent fabulous fantastic
        gorgeous great good lovely nice perfect stunning wonderful incredible impressive
        adorable fascinating relaxing peaceful rewarding inspiring fun hilarious funny epic
        meaningful powerful sweet special underrated terrific superb outstanding magnificent
        breathtaking spectacular phenomenal remarkable charming delightful enjoyable fulfilling
        heartwarming touching thrilling exciting inspirational motivating uplifting wholesome
        legendary tasty yummy gorgeous rad dope healthy therapeutic calming soothing cozy
        awesome valuable helpful useful kind generous brave talented smart genius best""")),
        1,
    ),
    **dict.fromkeys(
        sorted(_words(
        """awful bad boring disgusting horrible overrated pointless ridiculous terrible unfair
        stupid dumb useless annoying stressful exhausting frustrating tough hard difficult
        scary sad depressing rude mean toxic unhealthy expensive worst dull lame gross nasty
        painful disappointing mediocre tedious tiring overwhelming draining unjust cruel
        dangerous ugly awkward weird chaotic messy overpriced bland pathetic
        hopeless miserable heartbreaking unbearable irritating confusing""")),
        -1,
    ),
    **dict.fromkeys(sorted(_words("crazy insane wild intense surreal unreal important essential crucial necessary key")), 0),
}  # fmt: skip
_EVAL_ALT = _alt(_EVAL)
_INTENS = (
    r"(?:so|really|very|super|pretty|totally|absolutely|truly|quite|just|such|incredibly|extremely|too|kinda"
    r"|kind\s+of|sort\s+of|a\s+bit|a\s+little|an?|the|most|not|never|always|still|also|honestly|seriously"
    r"|literally|definitely|rather|fairly|insanely|crazy|mega|all|beyond|way|ridiculously|particularly|actually)"
)
_COPULA = r"(?:is|was|are|were|'s|'re|looks?|looked|sounds?|sounded|seems?|seemed|feels?|felt|tastes?|tasted|smells?|smelled|has\s+been|have\s+been|had\s+been|must\s+be|must\s+have\s+been|will\s+be|'ll\s+be|would\s+be|'d\s+be|be)"
_EVAL_PRED_RE = re.compile(rf"\b{_COPULA}(?:\s+{_INTENS})*\s+(?P<adj>{_EVAL_ALT})\b")
_WHAT_A_RE = re.compile(
    rf"^\W*(?:what|such)\s+(?:an?\s+)?(?:{_INTENS}\s+)*(?P<adj>{_EVAL_ALT})(?P<np>(?:\s+[a-z][a-z'-]*){{1,3}})",
)
_EVAL_ANY_RE = re.compile(rf"\b(?:{_EVAL_ALT})\b")
_EMOTION_OF_RE = re.compile(
    r"\b(?P<pred>proud\s+of|happy\s+for|impressed\s+(?:by|with)|disappointed\s+(?:in|with|by)|annoyed\s+(?:at|with|by)"
    r"|sick\s+of|tired\s+of|fed\s+up\s+with|obsessed\s+with|grateful\s+for|thankful\s+for|in\s+love\s+with"
    r"|crazy\s+about|passionate\s+about|excited\s+about|fond\s+of|a\s+(?:big\s+|huge\s+)?fan\s+of"
    r"|not\s+a\s+(?:big\s+|huge\s+)?fan\s+of|upset\s+(?:with|about)|mad\s+at|angry\s+(?:at|with)|scared\s+of|afraid\s+of)\s+",
)
_EMOTION_POLARITY = {
    "proud": 1, "happy": 1, "impressed": 1, "disappointed": -1, "annoyed": -1, "sick": -1, "tired": -1,
    "fed": -1, "obsessed": 1, "grateful": 1, "thankful": 1, "in": 1, "crazy": 1, "passionate": 1,
    "excited": 1, "fond": 1, "a": 1, "not": -1, "upset": -1, "mad": -1, "angry": -1, "scared": -1, "afraid": -1,
}  # fmt: skip

# Preference verbs and their lexical polarity.
_PREF_VERBS = {
    "love": 1, "loves": 1, "loved": 1, "loving": 1, "adore": 1, "adores": 1, "adored": 1, "like": 1,
    "likes": 1, "liked": 1, "enjoy": 1, "enjoys": 1, "enjoyed": 1, "prefer": 1, "prefers": 1, "dig": 1,
    "hate": -1, "hates": -1, "hated": -1, "dislike": -1, "dislikes": -1, "disliked": -1, "detest": -1,
    "despise": -1, "loathe": -1, "can't stand": -1, "cannot stand": -1, "can't bear": -1,
}  # fmt: skip
_PREF_ALT = _alt(_PREF_VERBS)
_ADV = (
    r"(?:really|absolutely|just|totally|also|still|do|does|did|truly|honestly|seriously|kinda|kind\s+of|sort\s+of"
    r"|always|usually|actually|definitely|genuinely|simply|literally|now|already|even|especially|particularly|both|all)"
)
_NEG = r"(?P<neg>don't|do\s+not|doesn't|does\s+not|didn't|did\s+not|never|no\s+longer|not|won't)"
_PREF_RE = re.compile(
    rf"\b(?P<subj>i|we)(?:\s+{_ADV})*(?:\s+{_NEG})?(?:\s+{_ADV})*\s+(?P<verb>{_PREF_ALT})\s+(?P<rest>\S)",
)
_FRAME_RE = re.compile(
    r"\b(?:(?P<subj>i|we)(?:\s+(?:really|honestly|do|still|kinda|kind\s+of|just|truly|genuinely|personally|also|definitely|totally|strongly))*"
    r"\s+(?P<verb>think|thought|believe|believed|feel\s+like|felt\s+like|feel\s+that|felt\s+that|guess|reckon|suppose|bet|figure|doubt)"
    r"|(?P<opinion>in\s+my\s+(?:humble\s+)?opinion|imo|imho|personally|to\s+me|if\s+you\s+ask\s+me)"
    r"|(?P<sure>i'm\s+(?:pretty\s+|so\s+|totally\s+|absolutely\s+)?(?:sure|certain|convinced|positive)"
    r"|i\s+am\s+(?:pretty\s+|so\s+)?(?:sure|certain|convinced)))\b(?:,?\s+that\b)?\s*,?\s*",
)
_REPORT_VERBS = (
    r"thinks|thought|believes|believed|says|said|feels|felt|reckons|told\s+me|loves|loved|hates|hated|likes|liked"
    r"|enjoys|enjoyed|adores|adored|can't\s+stand|prefers|insists|claims|swears"
)
_REPORT_VERB_RE = re.compile(rf"\b(?P<verb>{_REPORT_VERBS})\b(?:\s+that\b)?\s*")
_REPORTER_RE = re.compile(
    rf"(?:\b(?P<own>my|our|your)\s+{_KIN_MOD}(?P<rel>{_alt(_KIN_NORMAL)})|(?P<name>\b(?-i:[A-Z][a-z]+)))"
    r"(?:\s+(?:really|also|always|still|just|totally|definitely))?\s+$",
    _I,
)

_REPORT_WORDS = _words(
    "thinks thought believes believed says said feels felt reckons told loves loved hates hated likes liked enjoys "
    "enjoyed adores adored stand prefers insists claims swears"
)
_FRAME_WORDS = _words(
    "think thought believe believed feel felt guess reckon suppose bet figure doubt opinion imo imho personally sure "
    "certain convinced positive"
)
_PREF_WORDS = frozenset(w for v in _PREF_VERBS for w in v.split() if w not in ("can't", "cannot"))
_EVAL_WORDS = frozenset(_EVAL)
_EMOTION_WORDS = _words(
    "proud happy impressed disappointed annoyed sick tired fed obsessed grateful thankful love crazy passionate "
    "excited fond fan upset mad angry scared afraid"
)
_EXPLETIVE_RE = re.compile(r"\s+(how|that|to|when|what|seeing|hearing|being)\b\s*")
_EXPLETIVE_SUBJ_RE = re.compile(r"\b(?:it|that|this)(?:'s)?\s*$")
_EXPL_FRAME_RE = re.compile(
    r"(?:it's|its|it\s+is|it\s+was|it'll\s+be|it\s+will\s+be|that's)\s+(?:(?:so|really|very|super|pretty|more|most|quite|just|"
    r"always|also|not)\s+)*[a-z-]+\s+(to|that|how|when)\b\s*"
)
_NEGATION_RE = re.compile(r"\b(?:not|never)\b|n't\b")
_SELF_RE = re.compile(r"\b(?:i|i'm|we|we're|am|are)\b")

_QUESTION_START = re.compile(
    r"^\W*(?:(?:do|does|did|are|is|was|were|have|has|had|can|could|would|will|should|shall|may|might|must|am"
    r"|what|how|why|when|where|who|which|whose|whom)\s+(?:n't\s+|not\s+)?(?:you|i|we|they|he|she|it|that|this|there"
    r"|your|ya|u|anyone|anybody|everyone|people)\b|(?:any|anything|anyone)\s+\w+.*\?$)",
)

# Jobs (for "I'm a/an <job>").
_JOBS = _words(
    """teacher nurse doctor physician surgeon engineer developer programmer designer artist
    writer author novelist poet student manager chef cook lawyer attorney accountant counselor
    counsellor therapist firefighter officer cop soldier veteran scientist researcher professor
    lecturer musician photographer painter dancer athlete player coach trainer instructor
    volunteer entrepreneur consultant analyst architect pharmacist dentist vet veterinarian
    mechanic electrician plumber carpenter farmer pilot driver cashier barista waiter waitress
    bartender clerk secretary assistant receptionist librarian journalist editor producer
    director actor actress singer rapper dj streamer gamer youtuber blogger vlogger influencer
    filmmaker model realtor banker intern baker tutor caregiver psychologist psychiatrist
    paramedic technician programmer ceo founder owner freelancer administrator supervisor
    specialist advocate activist mentor social worker pastor priest minister chemist
    biologist physicist mathematician historian economist investor trader broker agent
    salesman saleswoman salesperson marketer recruiter coder intern apprentice officer
    sergeant captain lieutenant guard janitor housekeeper nanny babysitter florist tailor
    jeweler butcher welder contractor builder landscaper gardener ranger lifeguard referee
    umpire comedian magician illustrator animator composer conductor guitarist pianist
    drummer violinist vocalist bassist sculptor potter craftsman engineer homemaker"""
)
_JOB_RE = re.compile(
    r"\b(?:i'm|i\s+am)\s+(?:now\s+|currently\s+|still\s+|actually\s+|just\s+|officially\s+|finally\s+|also\s+)*"
    r"(?:a|an)\s+(?P<job>(?:[a-z-]+\s+){0,3}?(?:" + _alt(_JOBS) + r"))\b"
    r"|\bi\s+(?:currently\s+|now\s+|still\s+|also\s+)?work(?:ed)?\s+as\s+(?:a|an)\s+(?P<job2>[a-z -]{2,40}?)(?=[,.;!?]|\s+(?:at|for|in|and|but|so|since)\b|$)"
    r"|\bmy\s+job\s+(?:is|was)\s+(?:being\s+)?(?:a|an)\s+(?P<job3>[a-z -]{2,40}?)(?=[,.;!?]|\s+(?:at|for|in|and|but|so)\b|$)"
)
_WORK_AT_RE = re.compile(
    r"\bi\s+(?:currently\s+|now\s+|still\s+|also\s+)?(?:work|worked|'m\s+working|am\s+working|volunteer|intern)\s+"
    r"(?P<prep>at|for)\s+(?P<rest>\S)"
)
_ALLERGY_RE = re.compile(
    r"\b(?:i'm|i\s+am|i've\s+been|i\s+was)\s+(?:\w+\s+)?allergic\s+to\s+(?P<rest>\S)|\bmy\s+(?:\w+\s+)?allerg(?:y|ies)\s+(?:to\s+|is\s+|are\s+)(?P<rest2>\S)"
)
_FAV_RE = re.compile(
    r"\bmy\s+(?:all[- ]time\s+|absolute\s+|very\s+|new\s+|current\s+|personal\s+)?favou?rite\s+(?P<cat>[a-z][a-z -]{0,30}?)\s+"
    r"(?:is|are|was|were|has\s+to\s+be|would\s+be|of\s+all\s+time\s+is)\s+(?:probably\s+|definitely\s+|still\s+|now\s+|prob\s+)?(?P<rest>\S)"
)
_FAV_REV_RE = re.compile(
    r"(?P<np>\b[a-z][a-z' -]{1,40}?)\s+(?:is|are|was)\s+(?:definitely\s+|probably\s+|still\s+|totally\s+)?my\s+"
    r"(?:all[- ]time\s+|absolute\s+|new\s+)?favou?rite(?:\s+(?P<cat>[a-z]+))?\b"
)
_LIVE_RE = re.compile(
    r"\b(?:i|we)\s+(?:currently\s+|now\s+|still\s+|also\s+)?(?:live|lived|'ve\s+lived|have\s+lived|'ve\s+been\s+living|"
    r"'m\s+living|am\s+living|'re\s+living|(?:just\s+|recently\s+|finally\s+)?moved|'ve\s+(?:just\s+)?moved|have\s+(?:just\s+)?moved|relocated)\s+"
    r"(?P<prep>in|to|near)\s+(?P<rest>\S)"
)
_FROM_RE = re.compile(r"\b(?:i'm|i\s+am)\s+(?:originally\s+)?from\s+(?P<rest>\S)|\bi\s+(?:grew\s+up|was\s+born)\s+in\s+(?P<rest2>\S)")
_PLAYS_RE = re.compile(
    r"\b(?:i|we)\s+(?:also\s+|still\s+|usually\s+|often\s+|regularly\s+|sometimes\s+)?play\s+(?P<rest>\S)"
)
_STATUS_RE = re.compile(
    r"\b(?:i'm|i\s+am)\s+(?:now\s+|still\s+|happily\s+|officially\s+|also\s+)?"
    r"(?P<st>married|single|divorced|engaged|pregnant|vegan|vegetarian|pescatarian|retired|transgender|trans|"
    r"non-binary|nonbinary|gay|lesbian|bisexual|queer|left-handed|right-handed|sober|widowed|unemployed|self-employed|"
    r"a\s+(?:single\s+)?(?:mom|dad|mother|father|parent|grandma|grandpa|grandparent|vegan|vegetarian|introvert|extrovert|"
    r"morning\s+person|night\s+owl|homebody|dog\s+person|cat\s+person|twin|christian|muslim|buddhist|atheist))\b"
)
_HABIT_RE = re.compile(
    r"\b(?:i|we)\s+(?P<adv>usually|always|often|normally|regularly|sometimes|generally|typically|frequently|occasionally|tend\s+to)"
    r"\s+(?P<rest>[a-z][^.!?;]*)"
)
_BEEN_FOR_RE = re.compile(
    r"\b(?:i|we)(?:'ve|\s+have)\s+been\s+(?P<ing>[a-z]+ing)\b(?P<obj>[^.!?;]*?)\s*\b(?P<dur>(?:for|since)\s+(?:(?:about|over|almost|nearly|like|around)\s+)?"
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a\s+few|a\s+couple\s+of|many|several|years|ages|decades|[a-z]+)"
    r"(?:\s+(?:years?|months?|weeks?|decades?))?)"
)
_EVERY_RE = re.compile(
    r"\b(?:i|we)\s+(?:also\s+|still\s+)?(?P<verb>[a-z]+)\b(?P<obj>[^.!?;,]{0,60}?)\s+(?P<freq>every\s+(?:day|morning|evening|night|week|weekend|month|year"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|each\s+(?:day|week|morning)|daily|weekly|twice\s+a\s+\w+|once\s+a\s+\w+)\b"
)

# Events: first-person (or "my X") clauses in the past, perfect, future or progressive.
_IRREGULAR = {
    "went": "go", "gone": "go", "got": "get", "gotten": "get", "made": "make", "took": "take", "taken": "take",
    "saw": "see", "seen": "see", "ran": "run", "came": "come", "began": "begin", "begun": "begin",
    "bought": "buy", "brought": "bring", "caught": "catch", "did": "do", "done": "do", "drew": "draw",
    "drawn": "draw", "drove": "drive", "driven": "drive", "ate": "eat", "eaten": "eat", "fell": "fall",
    "fallen": "fall", "felt": "feel", "found": "find", "flew": "fly", "flown": "fly", "gave": "give",
    "given": "give", "grew": "grow", "grown": "grow", "had": "have", "heard": "hear", "held": "hold",
    "kept": "keep", "knew": "know", "known": "know", "left": "leave", "lost": "lose", "met": "meet",
    "paid": "pay", "put": "put", "read": "read", "rode": "ride", "ridden": "ride", "sang": "sing",
    "sung": "sing", "sat": "sit", "sent": "send", "slept": "sleep", "spent": "spend", "spoke": "speak",
    "spoken": "speak", "swam": "swim", "swum": "swim", "taught": "teach", "told": "tell", "thought": "think",
    "threw": "throw", "thrown": "throw", "won": "win", "wore": "wear", "worn": "wear", "wrote": "write",
    "written": "write", "built": "build", "became": "become", "become": "become", "chose": "choose",
    "chosen": "choose", "forgot": "forget", "forgotten": "forget", "hung": "hang", "hit": "hit", "hurt": "hurt",
    "led": "lead", "let": "let", "lit": "light", "quit": "quit", "said": "say", "set": "set", "shot": "shoot",
    "sold": "sell", "stood": "stand", "stuck": "stick", "broke": "break", "broken": "break", "blew": "blow",
    "dug": "dig", "fought": "fight", "fed": "feed", "froze": "freeze", "hid": "hide", "shook": "shake",
    "stole": "steal", "woke": "wake", "tore": "tear", "torn": "tear", "understood": "understand", "cut": "cut",
    "meant": "mean", "sought": "seek", "bent": "bend", "lent": "lend", "spun": "spin", "swung": "swing",
    "sank": "sink", "struck": "strike", "rang": "ring", "drank": "drink", "drunk": "drink", "was": "be",
    "were": "be", "been": "be", "overcame": "overcome", "underwent": "undergo", "upset": "upset",
    "spread": "spread", "bet": "bet", "cost": "cost", "slid": "slide", "fled": "flee", "dealt": "deal",
    "learnt": "learn", "burnt": "burn", "dreamt": "dream", "wound": "wind", "shut": "shut", "hosted": "host",
    "rebuilt": "rebuild", "redid": "redo", "withdrew": "withdraw", "forgave": "forgive",
    "mistook": "mistake", "undertook": "undertake", "beat": "beat", "ground": "grind", "leapt": "leap",
}  # fmt: skip
# Past forms that also read as present or as adjectives: events only with a time expression.
_AMBIGUOUS_PAST = _words("read put set hit cut hurt let quit upset spread bet cost shut beat had")
_PAST_IRREG = [w for w, lem in _IRREGULAR.items() if w not in ("gone", "gotten", "taken", "seen", "begun", "drawn", "driven",
                                                                   "eaten", "fallen", "flown", "given", "grown", "known",
                                                                   "ridden", "sung", "spoken", "swum", "thrown", "written",
                                                                   "chosen", "forgotten", "broken", "torn", "been", "was",
                                                                   "were", "drunk", "become")]  # fmt: skip
# Lemmas that are states or opinions, not events.
_STATIVE = _words(
    """let be feel think know mean want need love like hate enjoy guess wonder hope wish seem
    appreciate realize realise imagine believe suppose use say thank admire adore prefer care
    mind reckon understand agree hear figure doubt bet remember forget miss dislike deserve
    owe matter consider expect assume notice wonder look sound appear seem tend happen
    interest excite inspire amaze surprise please bless relieve worry scare tire bore stress
    concern confuse overwhelm exhaust disappoint frustrate annoy motivate thrill shock
    touch move impress delight fascinate determine satisfy bless stoke pump obsess honor honour humble dream"""
)
_EVT_ADV = (
    r"(?:just|finally|recently|also|actually|even|already|really|totally|then|first|both|all|officially|eventually"
    r"|ultimately|once|again|still|literally|definitely|kinda|kind\s+of|somehow|luckily|unfortunately|accidentally"
    r"|randomly|spontaneously|secretly|proudly|happily|successfully|together|too|ever|originally|initially|always"
    r"|probably|surely|certainly|hopefully|soon|now|recently|gladly|quickly|absolutely)"
)
_SUBJ_ALT = (
    r"(?P<subj>\bi\b|\bwe\b|\bme\s+and\s+(?:my|our)\s+[a-z]+(?:\s+[a-z]+)?|\b(?:my|our)\s+(?:[a-z]+\s+){0,2}?and\s+i\b"
    r"|\b(?:my|our)\s+(?P<poss>(?:(?!(?:and|or|but|the|to|of|in|on|at|with|for|from|a|an)\b)[a-z-]+\s+){0,2}?[a-z-]+))"
)
_COORD_BEFORE_RE = re.compile(r"\b([a-z]+)\s+and\s+$")
_EVENT_RE = re.compile(
    _SUBJ_ALT
    + rf"(?:\s+{_EVT_ADV})*(?:"
    rf"\s+(?P<past>{_alt(_PAST_IRREG)}|[a-z]{{2,}}ed)\b(?!')"
    rf"|(?:'ve|\s+have|\s+has)(?:\s+{_EVT_ADV})*\s+(?P<pp>been\s+to\b|been\s+[a-z]+ing\b|{_alt(w for w in _IRREGULAR if w not in ('been', 'was', 'were'))}|[a-z]{{2,}}ed)\b(?!')"
    r"|(?:'ll|\s+will|\s+shall|(?:'m|\s+am|'re|\s+are|\s+is|'s)\s+(?:going\s+to|gonna|planning\s+(?:on|to)|about\s+to|hoping\s+to"
    r"|set\s+to|scheduled\s+to|supposed\s+to)|\s+plan\s+to|\s+hope\s+to|\s+intend\s+to|\s+gonna|\s+want\s+to|'d\s+like\s+to"
    rf"|\s+would\s+like\s+to|\s+wanna)(?:\s+{_EVT_ADV})*\s+(?P<fut>[a-z]+)\b"
    rf"|(?:'m|\s+am|'re|\s+are)(?:\s+{_EVT_ADV})*\s+(?P<prog>[a-z]{{2,}}ing)\b"
    r")"
)
# A sentence that starts with a past verb and no subject ("Lost my job yesterday."): the speaker's event.
_BARE_PAST_RE = re.compile(
    rf"(?P<subj>)(?:{_EVT_ADV}\s+)*(?P<past>{_alt(_PAST_IRREG)}|[a-z]{{2,}}ed)\b(?!')"
    r"(?P<poss>(?!))?(?P<pp>(?!))?(?P<fut>(?!))?(?P<prog>(?!))?"
)
_ED_ADJ = _words(
    """excited interested tired stoked pumped obsessed blessed thrilled amazed scared worried stressed bored
    surprised pleased relieved inspired motivated determined committed dedicated devoted impressed delighted
    overwhelmed exhausted frustrated annoyed disappointed concerned confused convinced satisfied stuck
    touched moved honored honoured humbled grateful married engaged supposed used"""
)
_EVENT_SUBJECTS = _words("i we my our i've i'll i'm we've we'll we're")
_THING_BEFORE_RE = re.compile(r"\b(?:the|a|an|this|that|these|those|some|new|old)\s+$", _I)
# A name at a sentence start is recognised before these verbs ("Doug started two weeks ago").
_NAME_VERB_RE = re.compile(
    r"\s+(?:said|says|told|asked|thinks|thought|started|came|went|got|called|texted|wants|wanted|invited|gave|sent"
    r"|visited|joined|left|moved|helped|took|bought|met|showed|brought|loves|hates|likes|adopted|married)\b"
)
_AND_I_RE = re.compile(r"\s+and\s+(?:I|me)\b")
_VOCATIVE_BEFORE = re.compile(r"(?:^|[,!.?]|\b(?:hey|hi|hello|thanks|thank you|yo|oh|wow|dear|yeah|yes|congrats|sorry))\s*$", _I)
_VOCATIVE_AFTER = re.compile(r"\s*(?:[,.!?]|$)")
_COMMON_VERBS = frozenset(_IRREGULAR.values()) | _STATIVE | _words(
    """connect relax help learn play explore celebrate visit check try find see watch practice start meet catch
    pick grab cheer hang chill unwind support raise spend enjoy work ask talk chat hike walk run swim shop cook
    bake paint eat get make take go do be have give keep bring show tell share spread reach focus stay"""
) - _words("work school church bed class")
_PREV_WORD_RE = re.compile(r"([a-z']+)\s*(,?)\s*$")
_SUBORDINATORS = _words("since if unless until whenever whether although though what how where who which")
_POSS_SUBJ_PREV = _words(
    """and but so because when then while after before since yesterday today tonight recently lately finally
    also ago week weekend month year night morning afternoon evening day cause once as plus well oh what guess
    sadly luckily unfortunately fortunately anyway actually honestly basically yeah yes wow omg"""
)
_INTRANSITIVE = _words(
    "graduate retire marry win move arrive leave quit travel relocate volunteer run swim hike camp propose engage "
    "return resign"
)
_EVENT_TRAIL = _words(
    """and but so or then which that because while plus as if when with to for of the a an my your our his her
    their its this these those some in on at from by about into just really so very i we you it there here
    where who what how when like than as right"""
)
_MOTION_PROG = _words("going heading moving flying traveling travelling leaving starting visiting attending hosting driving")
_DESIRE = re.compile(r"want\s+to|'d\s+like\s+to|would\s+like\s+to|wanna|hope\s+to|hoping\s+to")

# Noun phrases.
_DETERMINERS = _words(
    "the a an my our your his her their its this that these those some any another each every "
    "one two three four five six seven eight nine ten several few couple lots lot bunch"
)
_NP_SKIP = _words(
    """new first second third last next little big huge whole own few couple bunch lot lots
    such so really very super pretty totally quite most more much many great good nice cool
    awesome amazing wonderful fantastic incredible beautiful lovely perfect best better fun
    special real true favorite favourite actual entire whole brand same different other
    several various certain couple of kind sort type bit"""
) | frozenset(_EVAL)
_NP_STOP = _COMMON | _words(
    """to of in on at by for with from about into onto over under after before during through
    between among around up down out off again once and or but so because if when while that
    which who whom whose where how why what than then there here now too also as it its
    them him her me us you i we they he she is are was were be been being am do does did
    have has had will would can could should may might must shall not no never just still
    even only really very yet ago back away together already since until till though
    although whether either nor per via like unlike near toward towards across behind beside
    besides within without upon against this these those my your our their his any some every
    each all both lately recently today tomorrow yesterday tonight week month year weekend day
    days weeks months years time times while whenever everything something anything nothing
    someone everyone anyone get got make made go went going take took come came see saw know
    think thought feel felt want wanted need say said tell told let keep kept start started gotta gonna wanna
    ya yeah ok okay"""
)
_VAGUE = _words(
    """thing things stuff lot lots bit way ways time times day days week weeks month months
    year years one ones kind sort type part place idea ideas moment moments life people
    person guy guys everyone everything something anything nothing other others while
    fun experience experiences chance chances opportunity opportunities reminder feeling
    feelings sense world end start beginning rest side point reason reasons stuff news
    question questions answer answers matter deal job work pic pics photo photos picture
    pictures sure shot look lot update updates thanks effort efforts journey process
    situation case number amount level couple few much many more most less"""
)
_NP_TOKEN = re.compile(r"[^\W_][\w'&-]*")
_DET_NP_RE = re.compile(r"\b(?:a|an|the|my|our|some|this|these|his|her|their|new)\s+(?=[a-z0-9])")

# Verbs after which the object is a concept, and the kind it gets.
_OBJ_TRIGGERS = {
    "work": "read reading reads watch watched watching watches wrote write writing writes listen listened listening "
    "recommend recommended recommends",
    "place": "visited visit visiting visits moved moving relocated traveled travelled traveling travelling flew drove "
    "explored exploring explore",
    "organization": "joined join joining joins",
    "activity": "started start starting began begin took took_up practice practicing practiced learned learning learnt "
    "learn tried try trying",
    "thing": "love loves loved loving like likes liked enjoy enjoys enjoyed enjoying hate hates hated adore adores "
    "adored play plays played playing attend attended attending bought buy buying got get make made making paint "
    "painted painting bake baked baking cook cooked cooking built build building adopt adopted adopting saw finished "
    "finish finishing won win winning ran run organize organized organizing organised host hosted hosting create "
    "created creating design designed designing planted plant grow growing grew restore restored restoring fix fixed "
    "fixing raise raised raising plan planned planning received receive gave give giving collect collected "
    "collecting studied study studying taught teach teaching opened open opening launched launch launching sell sold "
    "selling wear wore wearing drew draw drawing sang sing singing played",
}
_OBJ_KIND = {w: kind for kind, ws in _OBJ_TRIGGERS.items() for w in ws.split()}
_OBJ_MULTI = _words(
    """went_to go_to goes_to going_to been_to signed_up_for sign_up_for volunteer_at volunteer_for
    volunteer_with volunteered_at volunteered_for volunteered_with volunteering_at volunteering_for
    volunteering_with working_on work_on worked_on training_for trained_for preparing_for prepared_for
    applied_to applied_for apply_to apply_for trip_to went_on go_on going_on participated_in
    participate_in took_part_in competed_in performed_at perform_at took_up take_up taking_up
    interested_in passionate_about fan_of member_of part_of enrolled_in graduated_from studying_for
    getting_into got_into class_on course_on class_in course_in degree_in"""
)
_OBJ_MULTI = frozenset(k.replace("_", " ") for k in _OBJ_MULTI)
_OBJ_MULTI_PREFIX = frozenset(" ".join(k.split()[:2]) for k in _OBJ_MULTI if len(k.split()) == 3)
_OBJ_KIND["into"] = "thing"
_PARTICLES = _words("up in on out to into for at with")
_HOLIDAY_WORDS = _words(
    "christmas thanksgiving halloween easter hanukkah diwali ramadan eid passover birthday pride valentine valentine's"
)
_HOLIDAY_PHRASES = ("new year", "independence day", "mother's day", "father's day", "black friday", "of july", "patrick")
_MOTION_KIND = _words("went go goes going been trip")
_ACT_FIRST = frozenset(a.split()[0] for a in _ACTIVITY_SET if " " in a)
_MULTI_FIRST = frozenset(k.split()[0] for k in _OBJ_MULTI)
_CONCEPT_CUES = _ACTIVITY_SET | _ACT_FIRST | _MULTI_FIRST | frozenset(_OBJ_KIND)
_WORK_CATS = _words(
    "book books movie movies film films show shows series song songs album albums game games novel novels poem "
    "play musical painting artwork podcast anime manga comic comics"
)
_ED_NOUNS = _words("bed beds seed seeds need needs speed shed red reed weed feed")
_ADJ_SUFFIXES = ("ed", "able", "ible", "ful", "ous", "ive", "ly", "ish", "less")
_DET_BEFORE_RE = re.compile(r"\b(?:my|our|your|his|her|their|the|a|an|this|that|of)\s+(?:own\s+|new\s+|little\s+)?$")
_NEXT_WORD = re.compile(r"[ \t]+([^\W_][\w'&-]*)")
_TOKEN_PUNCT = frozenset("'&-_")


def _occurrences(low: str, word: str) -> Iterable[tuple[int, int]]:
    """Spans of ``word`` as a whole token of ``low``."""
    n, size = len(word), len(low)
    pos = low.find(word)
    while pos >= 0:
        end = pos + n
        if (pos == 0 or not (low[pos - 1].isalnum() or low[pos - 1] in _TOKEN_PUNCT)) and (
            end >= size or not (low[end].isalnum() or low[end] in _TOKEN_PUNCT)
        ):
            yield pos, end
        pos = low.find(word, pos + 1)


_SENT_END_RE = re.compile(r"[.!?]+[\"')\]]*(?=\s|$)|\n+")
_ABBREV_RE = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|vs|etc|Mt|Ave|No|e\.g|i\.e))\.$")
_CLAUSE_SPLIT_RE = re.compile(
    r"(?:;|:(?!\d)|\s[-\u2013\u2014]+\s|\u2014|,\s*(?:and|but|so|because|though|although|while|plus|or|which|since|cause|'cause)\b"
    r"|\s(?:but|because|although|though|whereas|plus|cause)\b|,\s*(?=(?:i|we|it|that|this|he|she|they|you)\b(?!\s*[,.!?])))\s*",
    _I,
)
_CAPS_RE = re.compile(r"(?<![\w'@#])(?!I(?:'[a-z]+)?\b)(?:[A-Z][A-Za-z'&.-]*[A-Za-z]|[A-Z])(?:\s+\d{1,4}\b(?![:/]))?")
_CAP_GAP_RE = re.compile(r"\s+(?:(?:of|the|de|da|del|la|le|du|von|van|y|&)\s+)*")
_CAP_GAP_LONG_RE = re.compile(r"\s+(?:(?:of|the|de|da|del|la|le|du|von|van|y|&|at|in|on|to|for|a|an|and)\s+)*")
_QUOTED_RE = re.compile(r"\"(?P<q>[^\"\n]{2,80})\"|(?<![A-Za-z])'(?P<s>[A-Za-z0-9][^'\n]{1,60}?)'(?![A-Za-z])")
_CHAT_TOKEN_RE = re.compile(r"[A-Za-z][A-Za-z']*")
_TRAIL_STRIP = ",;:-\u2013\u2014 \t\"'()[]"
_TRAIL_WORDS = _words("and but so or then which that because while plus as if when with to for of the a an")
_NORMALIZE = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})

_PRONOUN_THING = _words("it that this these those them they everything all")
_PRONOUN_PERSON = _words("he she him her")


# =========================================================================== helpers

_VADER: Any = None
_VADER_LOCK = threading.Lock()


def _sentiment(text: str) -> float:
    """VADER's compound score of ``text`` (one analyser, created on first use, shared)."""
    global _VADER
    if _VADER is None:
        with _VADER_LOCK:
            if _VADER is None:
                from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

                analyzer = SentimentIntensityAnalyzer()
                analyzer.lexicon.update({"overrated": -1.5, "underrated": 1.0, "pointless": -1.5, "meh": -0.5})
                _VADER = analyzer
    return float(_VADER.polarity_scores(text)["compound"])


def _time_pregate() -> tuple[str, ...] | None:
    """Substrings one of which every time expression needs (from the resolver's own rule gates).

    Each rule of :mod:`langmem_cog.timeparse` only runs when every group of its gate
    has a key in the lower-cased text, so the union of one group per rule is a
    necessary condition: text containing none of these keys has no time expression
    and the (comparatively slow) resolver is skipped. Returns None (always resolve)
    if the resolver's rules cannot be read.
    """
    try:
        from langmem_cog import timeparse

        rules = timeparse._RULES  # noqa: SLF001 - read-only use of the resolver's gates
        common = {"-", "/", "in", "now", "past", "last", "other", "after", "before", "day", "may", "mar", "dec", "oct"}
        keys: set[str] = set()
        for rule in rules:
            gate = rule.gate
            if not gate:
                return None
            best = min(gate, key=lambda g: (sum(k in common for k in g), -min(len(k) for k in g)))
            keys.update(best)
        return tuple(sorted(keys, key=lambda k: (len(k), k)))
    except Exception:  # pragma: no cover - a changed resolver: no pre-gate
        return None


_TIME_KEYS = _time_pregate()


def _resolve_times(text: str, low: str, reference: datetime) -> list[TimeMention]:
    if _TIME_KEYS is not None and text.isascii() and not any(k in low for k in _TIME_KEYS):
        return []
    return resolve_time_expressions(text, reference)



def is_chitchat(text: str) -> bool:
    """Whether ``text`` is small talk with nothing to remember.

    Greetings, thanks, farewells and bare reactions ("Hi!", "Thanks, Melanie!",
    "Bye! Take care.", "Wow, that's great!") are chit-chat; so is text with no
    word at all (emoji, punctuation). At most one capitalised word outside the
    small-talk vocabulary is allowed, and only beside small talk (the addressee's
    name). Anything longer than eight words is not chit-chat.

    Args:
        text: The text of one turn.

    Returns:
        True if the turn can be skipped.

    Raises:
        InvalidInputError: If ``text`` is not a string.

    Example:
        >>> [is_chitchat(t) for t in ("Hi!", "Thanks so much, Caroline!", "Bye :)", "Paris!")]
        [True, True, True, False]
        >>> is_chitchat("Thanks! I went hiking yesterday.")
        False
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"text must be a str, got {type(text).__name__}")
    if len(text) > 120:
        return False
    words = _CHAT_TOKEN_RE.findall(text.translate(_NORMALIZE))
    if not words:
        return True
    if len(words) > 8:
        return False
    names = 0
    for w in words:
        lw = w.lower().strip("'")
        if lw in _CHITCHAT_WORDS:
            continue
        if w[0].isupper() and names == 0 and len(words) > 1:
            names += 1
            continue
        return False
    return True


def _lemma(word: str) -> str:
    """A verb's lemma from a small irregular table and suffix rules (good enough for labels).

    >>> [_lemma(w) for w in ("went", "adopted", "tried", "stopped", "loved", "hiking", "running", "painted", "visited")]
    ['go', 'adopt', 'try', 'stop', 'love', 'hike', 'run', 'paint', 'visit']
    """
    w = word.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if w.endswith("ied") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("ed") and len(w) > 3 and not w.endswith("eed"):
        stem = w[:-2]
    elif w.endswith("ing") and len(w) > 4:
        stem = w[:-3]
    else:
        return w
    if stem in _STEM_FIX:
        return _STEM_FIX[stem]
    if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "lsfz" and stem[-1] not in "aeiou":
        return stem[:-1]
    if _ADD_E_RE.search(stem):
        return stem + "e"
    return stem


_ADD_E_RE = re.compile(r"^[^aeiou]*[aeiou][bcdfgkmnprstvz]$|(?:[^aeiou]c|v|iz|[^aeiou]at|[^aeiou]ut|ur[sc]|[^aeioun]g|[^aeiou]ur|[^aeiou]is)$")
_STEM_FIX = {"creat": "create", "danc": "dance", "rais": "raise", "chang": "change", "us": "use",
             "hik": "hike", "bak": "bake", "wak": "wake", "mov": "move", "liv": "live", "writ": "write", "rid": "ride",
             "com": "come", "mak": "make", "tak": "take", "hop": "hope", "shar": "share", "car": "care", "explor": "explore",
             "practic": "practice", "purchas": "purchase", "releas": "release", "receiv": "receive", "achiev": "achieve",
             "believ": "believe", "leav": "leave", "continu": "continue", "arriv": "arrive", "driv": "drive",
             "decid": "decide", "celebrat": "celebrate", "graduat": "graduate", "donat": "donate", "sav": "save",
             "complet": "complete", "participat": "participate", "compet": "compete", "prepar": "prepare",
             "rescu": "rescue", "argu": "argue", "los": "lose", "chos": "choose", "improv": "improve",
             "organiz": "organize", "organis": "organise", "recogniz": "recognize", "realiz": "realize",
             "sing": "sing", "bring": "bring", "ring": "ring", "swing": "swing", "cling": "cling", "sting": "sting",
             "gett": "get", "sitt": "sit", "runn": "run", "swimm": "swim", "shopp": "shop", "plann": "plan",
             "join": "join", "paint": "paint", "visit": "visit", "start": "start", "heat": "heat", "eat": "eat",
             "meet": "meet", "read": "read", "fill": "fill", "kill": "kill", "spill": "spill", "bowl": "bowl",
             "add": "add", "press": "press", "kiss": "kiss", "miss": "miss", "pass": "pass", "buzz": "buzz",
             "arrang": "arrange", "challeng": "challenge", "exchang": "exchange", "lung": "lunge", "loung": "lounge",
             "plung": "plunge", "rang": "range", "figur": "figure", "captur": "capture", "measur": "measure",
             "pictur": "picture", "ventur": "venture", "nurtur": "nurture", "enjoy": "enjoy", "stay": "stay",
             "bless": "bless", "discuss": "discuss", "focus": "focus", "plac": "place", "struggl": "struggle",
             "settl": "settle", "handl": "handle", "tackl": "tackle", "cycl": "cycle", "juggl": "juggle",
             "cuddl": "cuddle", "snuggl": "snuggle", "volunteer": "volunteer", "engag": "engage", "manag": "manage"}  # fmt: skip


def _gerund(verb: str) -> str:
    """``paint`` -> ``painting``, ``hike`` -> ``hiking``, ``run`` -> ``running``."""
    v = verb.lower()
    if v.endswith("ing") or not v.isalpha():
        return v
    if v in ("be", "see", "flee", "agree", "ski"):
        return v + "ing"
    if v.endswith("ie"):
        return v[:-2] + "ying"
    if v.endswith("e") and not v.endswith("ee"):
        return v[:-1] + "ing"
    if v in _DOUBLE:
        return v + v[-1] + "ing"
    return v + "ing"


_DOUBLE = _words("run swim shop jog sit get set put cut hit stop plan chat dig skip drum rap scan spin begin win")


#: Nouns that denote people (never concepts).
_PERSON_NOUNS = frozenset(_KIN_NORMAL) | (_NAMED_ONLY - _PETS) | _words(
    "people person guy guys girl girls boy boys man men woman women folks family families everyone everybody")

_REST_CUT_RE = re.compile(r",|\s+(?:and|but|so|which|because|while)\s+(?:it|i|we|he|she|they|you|that|this|it's|i'm)\b")
_GERUND_OBJ_RE = re.compile(r"\s+(?:(?:about|with|on|in|to|for|at|into|through|around)\s+)?(?=[^\W_])")
_GERUND_DOBJ_RE = re.compile(r"\s+(?=(?:my|our|his|her|their|the|a|an|this|these|those|some)\s)")
_GENERIC_PEOPLE = _words(
    "people person guy guys folks everyone everybody someone somebody anyone anybody others one ones"
)

#: Fact predicates whose object is also a concept, with its kind.
_CONCEPT_FACTS = {"likes": "thing", "dislikes": "thing", "allergic_to": "thing", "favorite": "thing",
                  "lives_in": "place", "from": "place", "works_at": "organization", "plays": "activity"}  # fmt: skip


#: Words that are never read as a name at a sentence start.
_NOT_NAMES = (
    _ACTIVITY_SET | _PLACES | _NATIONALITIES | _BRANDS | _PLACE_HEADS | _ORG_HEADS | _JOBS | _PETS | _COMMON_VERBS
    | frozenset(_EVAL) | _VAGUE | _HOLIDAY_WORDS | _FRAME_WORDS | _PERSON_NOUNS
)


class _Concept(NamedTuple):
    name: str
    kind: str
    start: int
    end: int
    prio: int


class _Person(NamedTuple):
    name: str
    start: int
    end: int


class _Ctx:
    """Per-turn working state."""

    __slots__ = (
        "turn", "speaker", "addressee", "text", "low", "sents", "clauses", "times", "concepts", "persons",
        "prev_concepts", "prev_persons", "known", "pets", "pstarts", "words", "vocatives", "speakers", "pet_names",
    )  # fmt: skip

    def __init__(self, turn: Any, text: str, low: str, words: set[str], addressee: str | None, known: set[str],
                 pets: set[str], prev_concepts: list[str], prev_persons: list[str]) -> None:  # fmt: skip
        self.turn = turn
        self.speaker: str = turn.speaker
        self.addressee = addressee
        self.text = text
        self.low = low
        self.sents: list[tuple[int, int]] = []
        self.clauses: list[tuple[int, int]] = []
        self.times: list[TimeMention] = []
        self.concepts: list[_Concept] = []
        self.persons: list[_Person] = []
        self.known = known
        self.pets = pets
        self.prev_concepts = prev_concepts
        self.prev_persons = prev_persons
        self.pstarts: frozenset[int] = frozenset()
        self.words = words
        self.vocatives: set[int] = set()
        self.speakers: frozenset[str] = frozenset()
        self.pet_names: frozenset[str] = frozenset(p.lower() for p in pets)


def _prepare(raw: str) -> tuple[str, str]:
    """``(text, low)``: typographic quotes made ASCII, and a lower-cased copy of the same length."""
    text = raw.translate(_NORMALIZE)
    low = text.lower()
    if len(low) != len(text):  # a few characters change length when lower-cased
        low = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return text, low


def _sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``[begin, end)`` (end includes the final punctuation), blanks skipped."""
    spans: list[tuple[int, int]] = []
    begin = 0
    for m in _SENT_END_RE.finditer(text):
        if m.group().startswith(".") and _ABBREV_RE.search(text, max(0, m.start() - 5), m.start() + 1):
            continue
        spans.append((begin, m.end()))
        begin = m.end()
    spans.append((begin, len(text)))
    out = []
    for b, e in spans:
        while b < e and text[b].isspace():
            b += 1
        while e > b and text[e - 1].isspace():
            e -= 1
        if e > b:
            out.append((b, e))
    return out


def _clauses(low: str, b: int, e: int) -> list[tuple[int, int]]:
    out = []
    for m in _CLAUSE_SPLIT_RE.finditer(low, b, e):
        if m.start() > b:
            out.append((b, m.start()))
        b = m.end()
    if e > b:
        out.append((b, e))
    return out


def _clean_np(name: str) -> str:
    return name.strip(_TRAIL_STRIP).strip()


# =========================================================================== the extractor


class RuleExtractor:
    """Deterministic regex-and-lexicon extractor of PEC2F records (no model, no network).

    The extractor remembers the names it has seen (speakers, ``known_people``,
    people introduced as "my friend Josh", pet names) across calls, so that a
    known name is recognised even at the start of a sentence. Each call first
    scans all its turns for such names, so extracting the same turns twice gives
    equal results. That memory makes an instance stateful: use one per thread
    (or per namespace), not one shared between threads.

    Args:
        known_people: Names known to be people before the first call (e.g. the
            conversation's participants).
        strict: Re-raise unexpected errors instead of logging them and returning a
            bare extraction for the failing turn (use in tests).

    Example:
        >>> from datetime import datetime, timezone
        >>> from langmem_cog.records import Turn
        >>> ts = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
        >>> turns = [Turn(id="1", namespace="d", speaker="Maya", text="I hate running.", timestamp=ts),
        ...          Turn(id="2", namespace="d", speaker="Maya", text="I'm allergic to shellfish.", timestamp=ts)]
        >>> a, b = RuleExtractor().extract(turns)
        >>> [(c.target, c.predicate, c.polarity) for c in a.claims]
        [('running', 'preference', -1)]
        >>> [(f.subject, f.predicate, f.object) for f in b.facts]
        [('Maya', 'allergic_to', 'shellfish')]
    """

    def __init__(self, known_people: Iterable[str] = (), *, strict: bool = False) -> None:
        if isinstance(known_people, str):
            raise InvalidInputError("known_people must be an iterable of names, not a single string")
        self._known: set[str] = {str(p).strip() for p in known_people if str(p).strip()}
        self._pets: set[str] = set()
        self._speakers: frozenset[str] = frozenset(self._known)
        self._strict = strict

    # ------------------------------------------------------------------ public API

    @property
    def known_people(self) -> frozenset[str]:
        """Names this extractor treats as people (grows with every call).

        Example:
            >>> from datetime import datetime, timezone
            >>> from langmem_cog.records import Turn
            >>> ts = datetime(2023, 5, 8, tzinfo=timezone.utc)
            >>> rx = RuleExtractor(known_people=["Caroline"])
            >>> _ = rx.extract([Turn(id="1", namespace="d", speaker="Melanie", timestamp=ts,
            ...                      text="My friend Josh ran a marathon.")])
            >>> sorted(rx.known_people)
            ['Caroline', 'Josh', 'Melanie']
        """
        return frozenset(self._known)

    def extract(self, turns: Sequence[Turn]) -> list[Extraction]:
        """Extract records from each turn.

        Args:
            turns: Turns in chronological order (objects with ``id``, ``speaker``,
                ``text`` and an aware ``timestamp``; ``conversation_id`` is used when
                present to find each turn's addressee).

        Returns:
            One :class:`Extraction` per turn, in order. Every record's
            ``source_turn_id`` is its turn's id.

        Raises:
            InvalidInputError: If ``turns`` is not a sequence of turns.

        Example:
            >>> from datetime import datetime, timezone
            >>> from langmem_cog.records import Turn
            >>> ts = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
            >>> ex = RuleExtractor().extract([Turn(id="t1", namespace="d", speaker="Leo", timestamp=ts,
            ...     text="I have a dog named Bailey and I work as a chemistry teacher.")])[0]
            >>> [(f.predicate, f.object) for f in ex.facts]
            [('has', 'dog named Bailey'), ('works_as', 'chemistry teacher')]
            >>> RuleExtractor().extract([Turn(id="t2", namespace="d", speaker="Leo", text="Bye!",
            ...                               timestamp=ts)])[0].empty
            True
        """
        if isinstance(turns, (str, bytes)) or not isinstance(turns, Sequence):
            raise InvalidInputError(f"turns must be a sequence of Turn objects, got {type(turns).__name__}")
        for i, t in enumerate(turns):
            if not all(hasattr(t, a) for a in ("id", "speaker", "text", "timestamp")):
                raise InvalidInputError(f"turns[{i}] is a {type(t).__name__}, not a Turn")
            if not isinstance(t.text, str) or not isinstance(t.timestamp, datetime) or t.timestamp.tzinfo is None:
                raise InvalidInputError(f"turns[{i}] ({t.id!r}) needs a str text and an aware timestamp")
        # pre-scan: names and pets of the whole batch are known before extraction
        known = set(self._known)
        pets = set(self._pets)
        prepared: list[tuple[str, str, set[str]]] = []
        speakers = set(self._speakers)
        recent: dict[str, list[set[str]]] = {}  # the last three turns' words, per conversation
        for t in turns:
            known.add(t.speaker)
            speakers.add(t.speaker)
            text, low = _prepare(t.text)
            words = set(_NP_TOKEN.findall(low))
            prepared.append((text, low, words))
            conv = str(getattr(t, "conversation_id", ""))
            window = recent.setdefault(conv, [])
            pet_context = bool(words & _PET_CUES) or any(w & _PET_CUES for w in window)
            self._scan_names(text, words, known, pets, pet_context)
            window.append(words)
            del window[:-3]
        self._speakers = frozenset(speakers)
        known -= pets
        addressees = self._addressees(turns)
        out: list[Extraction] = []
        prev_concepts: dict[str, list[str]] = {}
        prev_persons: dict[str, list[str]] = {}
        for t, addressee, prep in zip(turns, addressees, prepared, strict=True):
            conv = str(getattr(t, "conversation_id", ""))
            try:
                ex = self._extract_one(t, prep, addressee, known, pets, prev_concepts.get(conv, []), prev_persons.get(conv, []))
            except Exception:
                if self._strict:
                    raise
                logger.exception("rule extraction failed on turn %r; returning a bare extraction", t.id)
                ex = Extraction(turn_id=t.id, speaker=t.speaker, timestamp=t.timestamp)
            if ex.concepts or ex.persons:
                prev_concepts[conv] = [c.name for c in ex.concepts]
                prev_persons[conv] = list(ex.persons)
            out.append(ex)
        self._known = known
        self._pets = pets
        return out

    # ------------------------------------------------------------------ batch helpers

    @staticmethod
    def _scan_names(text: str, words: set[str], known: set[str], pets: set[str], pet_context: bool) -> None:
        """Learn pet names ("my dog Luna", "her name is Coco" near a pet word) and people introduced by
        relation ("my friend Josh", "his name is Kyle" with no pet around)."""
        if words & _PETS:
            found = [m.group("name") for m in _PET_NAMED_RE.finditer(text)]
            found += [m.group("name2") for m in _PET_NAMED_RE.finditer(text) if m.group("name2")]
            found += [m.group("name") for m in _HAVE_PET_RE.finditer(text) if m.group("name")]
            found += [m.group("name") for m in _NAME_COMMA_PET_RE.finditer(text)]
            pets.update(n for n in found if n.lower() not in _COMMON)
        if "name" in words or "names" in words or "named" in words or "this" in words or "meet" in words:
            for m in _NAME_IS_RE.finditer(text):
                names = _CAP_NAME_RE.findall(m.group("names"))
                target = pets if pet_context else known
                target.update(n for n in names if n.lower() not in _COMMON)
        if words & _OWNERS and words & _RELATIONS:
            for m in _KIN_RE.finditer(text):
                name = m.group("name")
                rel = m.group("rel").lower()
                if name and rel not in _PETS and name.lower() not in _COMMON :
                    known.add(name)

    @staticmethod
    def _addressees(turns: Sequence[Any]) -> list[str | None]:
        """For each turn, the nearest other speaker of its conversation (before it, else after it)."""
        n = len(turns)
        out: list[str | None] = [None] * n
        last: dict[str, tuple[str, str | None]] = {}  # conv -> (last speaker, last other speaker)
        for i, t in enumerate(turns):
            conv = str(getattr(t, "conversation_id", ""))
            prev = last.get(conv)
            if prev is not None:
                sp, other = prev
                out[i] = sp if sp != t.speaker else (other if other != t.speaker else None)
                last[conv] = (t.speaker, sp if sp != t.speaker else other)
            else:
                last[conv] = (t.speaker, None)
        nxt: dict[str, str] = {}
        for i in range(n - 1, -1, -1):
            t = turns[i]
            conv = str(getattr(t, "conversation_id", ""))
            if out[i] is None and conv in nxt and nxt[conv] != t.speaker:
                out[i] = nxt[conv]
            if conv not in nxt or t.speaker != nxt[conv]:
                nxt[conv] = t.speaker
        return out

    # ------------------------------------------------------------------ one turn

    def _extract_one(self, turn: Any, prep: tuple[str, str, set[str]], addressee: str | None, known: set[str],
                     pets: set[str], prev_concepts: list[str], prev_persons: list[str]) -> Extraction:  # fmt: skip
        ex = Extraction(turn_id=turn.id, speaker=turn.speaker, timestamp=turn.timestamp)
        raw = turn.text
        if is_chitchat(raw):
            return ex
        text, low, words = prep
        ctx = _Ctx(turn, text, low, words, addressee, known, pets, prev_concepts, prev_persons)
        ctx.speakers = self._speakers
        ctx.sents = _sentences(text)
        ctx.times = _resolve_times(raw, low, turn.timestamp)
        self._find_persons(ctx)
        ctx.pstarts = frozenset(p.start for p in ctx.persons)
        for p in ctx.persons:
            if _VOCATIVE_BEFORE.search(text, max(0, p.start - 12), p.start) and _VOCATIVE_AFTER.match(text, p.end):
                ctx.vocatives.add(p.start)
        self._find_concepts(ctx)
        questions = [self._is_question(low, b, e) for b, e in ctx.sents]
        sent_clauses = [_clauses(low, b, e) if not q else [] for (b, e), q in zip(ctx.sents, questions, strict=True)]
        events = self._find_events(ctx, sent_clauses)
        facts: list[ExtractedFact] = []
        claims: list[ExtractedClaim] = []
        seen_claims: set[tuple[str, str, str]] = set()
        gates = self._claim_gates(ctx)
        for (b, e), q, clauses in zip(ctx.sents, questions, sent_clauses, strict=True):
            if q:
                continue
            self._find_facts(ctx, b, e, facts)
            if not gates:
                continue
            for cb, ce in clauses:
                claim = self._claim(ctx, cb, ce, facts, gates)
                if claim is not None:
                    key = (claim.source, claim.target, claim.predicate)
                    if key not in seen_claims:
                        seen_claims.add(key)
                        claims.append(claim)
        if not (ctx.concepts or events or facts or claims):
            self._fallback_concepts(ctx)
        ex.persons = self._person_names(ctx)
        ex.concepts = self._concept_records(ctx)
        ex.events = events
        ex.facts = self._dedupe_facts(facts)
        ex.claims = claims
        return ex

    # ------------------------------------------------------------------ persons

    def _add_person(self, ctx: _Ctx, name: str, start: int, end: int) -> None:
        if name and name != ctx.speaker:
            ctx.persons.append(_Person(name, start, end))

    def _owner(self, ctx: _Ctx, own: str) -> str | None:
        own = own.lower()
        return ctx.addressee if own == "your" else ctx.speaker

    def _find_persons(self, ctx: _Ctx) -> None:
        text, low = ctx.text, ctx.low
        kin_spans: list[tuple[int, int]] = []
        if "my " in low or "our " in low or "your " in low:
            for m in _KIN_RE.finditer(text):
                rel = m.group("rel").lower()
                name = m.group("name")
                if name and rel not in _PETS and rel != "pet" and name.lower() not in _COMMON and name not in ctx.pets:
                    self._add_person(ctx, name, m.start("name"), m.end("name"))
                    kin_spans.append((m.start("name"), m.end("name")))
                elif rel in _KIN_NORMAL:
                    owner = self._owner(ctx, m.group("own"))
                    if owner:
                        self._add_person(ctx, f"{owner}'s {_KIN_NORMAL[rel]}", m.start(), m.end("rel"))
        if "'s " in text:
            for m in _POSS_KIN_RE.finditer(text):
                if m.group("name").lower() not in _COMMON:
                    self._add_person(ctx, f"{m.group('name')}'s {_KIN_NORMAL[m.group('rel').lower()]}", m.start(), m.end())
        if '"' in text or "'" in text:  # quoted titles: concepts, and no names inside
            for m in _QUOTED_RE.finditer(text):
                g = "q" if m.group("q") is not None else "s"
                q = _clean_np(m.group(g).lower())
                if q and 1 <= len(q.split()) <= 10 and q.split()[0] not in ("s", "t", "re", "ve", "ll", "m", "d"):
                    ctx.concepts.append(_Concept(q, "work", m.start(g), m.end(g), 0))
                    kin_spans.append((m.start(g), m.end(g)))
        self._scan_caps(ctx, kin_spans)

    def _scan_caps(self, ctx: _Ctx, skip: list[tuple[int, int]]) -> None:
        """Capitalised sequences -> persons (single names) or concepts (places, organisations, works...)."""
        text = ctx.text
        sent_starts = {b for b, _ in ctx.sents}
        # also treat the first word after an opening quote or bracket at a sentence start as a start
        toks = [(m.start(), m.end()) for m in _CAPS_RE.finditer(text)]
        if not toks:
            return
        # group adjacent capitalised tokens
        groups: list[list[tuple[int, int]]] = []
        cur: list[tuple[int, int]] = [toks[0]]
        for s, e in toks[1:]:
            ps, pe = cur[-1]
            gap = text[pe:s]
            if _CAP_GAP_RE.fullmatch(gap) or (len(cur) >= 2 and _CAP_GAP_LONG_RE.fullmatch(gap) and "and" not in gap.split()):
                cur.append((s, e))
            else:
                groups.append(cur)
                cur = [(s, e)]
        groups.append(cur)
        for g in groups:
            # split at stop tokens (I, I'm, days, months, OMG...)
            part: list[tuple[int, int]] = []
            for s, e in g:
                w = text[s:e]
                wl = w.lower()
                wbase = wl[:-2] if wl.endswith("'s") else wl
                if wbase in _CAP_BREAK or w in _CAP_KIN or w[:-2] in _CAP_KIN:
                    if part:
                        self._classify_caps(ctx, part, sent_starts, skip)
                    part = []
                    if w in _CAP_KIN or w[:-2] in _CAP_KIN:
                        rel = _CAP_KIN.get(w) or _CAP_KIN[w[:-2]]
                        self._add_person(ctx, f"{ctx.speaker}'s {rel}", s, e)
                    continue
                part.append((s, e))
            if part:
                self._classify_caps(ctx, part, sent_starts, skip)

    def _classify_caps(self, ctx: _Ctx, part: list[tuple[int, int]], sent_starts: set[int],
                       skip: list[tuple[int, int]]) -> None:  # fmt: skip
        text = ctx.text
        s0, e_last = part[0][0], part[-1][1]
        if any(a <= s0 < b for a, b in skip):
            return
        at_start = s0 in sent_starts or (s0 > 0 and text[s0 - 1] in "\"'(" and (s0 - 1) in sent_starts)
        article = False
        if at_start and len(part) < 3:  # drop common sentence-initial words ("Yesterday Melanie", "The Godfather")
            while part and text[part[0][0] : part[0][1]].lower() in _COMMON:
                article = text[part[0][0] : part[0][1]].lower() == "the"
                part = part[1:]
                at_start = False
            if not part:
                return
            s0 = part[0][0]
        elif len(part) > 1 and text[part[0][0] : part[0][1]].lower() == "the":
            article = True
        words = [text[s:e] for s, e in part]
        possessive = words[-1].endswith("'s")
        if possessive:
            words[-1] = words[-1][:-2]
            e_last -= 2
        name = " ".join(text[s0:e_last].split())
        first = words[0].split()[0]
        before = text[max(0, s0 - 40) : s0]
        if len(part) == 1 and " " not in words[0]:
            w = words[0]
            if article:  # "The Godfather"
                if w.lower() not in _COMMON:
                    ctx.concepts.append(_Concept(w.lower(), "work" if _is_work_context(before) else "thing", s0, e_last, 0))
                return
            wl = w.lower()
            alias = self._alias(ctx, w)
            if alias is not None:  # "Mel" -> "Melanie"
                self._add_person(ctx, alias, s0, e_last)
                return
            if w in ctx.known:
                self._add_person(ctx, w, s0, e_last)
                return
            if w in ctx.pets:
                ctx.concepts.append(_Concept(wl, "thing", s0, e_last, 1))
                return
            if len(w) < 2 or wl in _COMMON:
                return
            if at_start and not (wl not in _NOT_NAMES and (_AND_I_RE.match(text, e_last) or _NAME_VERB_RE.match(text, e_last))):
                return  # an unknown single capitalised word at a sentence start is ambiguous
            if w.isupper():
                kind = "place" if wl in _PLACE_ACRONYMS else "topic"
                ctx.concepts.append(_Concept(wl, kind, s0, e_last, 1))
                return
            if wl in _NATIONALITIES or wl.endswith(("ern",)) and wl[:-3] in ("north", "south", "east", "west", "midwest"):
                ctx.concepts.append(_Concept(wl, "topic", s0, e_last, 1))
                return
            if wl in _PLACES:
                ctx.concepts.append(_Concept(wl, "place", s0, e_last, 1))
                return
            if wl in _COMMON_VERBS or wl in _EVAL or wl in _FRAME_WORDS or wl in _VAGUE or wl in _HOLIDAY_WORDS:
                return  # a capitalised common word ("I Bet", "Hang in there")

            if wl in _BRANDS or any(c.isupper() for c in w[1:]) or any(c.isdigit() for c in w):
                ctx.concepts.append(_Concept(wl, "thing", s0, e_last, 1))
                return
            if wl in _PLACE_HEADS or wl in _ORG_HEADS or wl in _ACTIVITY_SET or wl in _JOBS or wl in _PETS:
                return  # a capitalised common noun ("Park", "Yoga")
            if _THING_BEFORE_RE.search(before):  # "the Prius", "a Fender": names of things
                ctx.concepts.append(_Concept(wl, "thing", s0, e_last, 1))
                return
            if not possessive and _is_place_context(before):
                ctx.concepts.append(_Concept(wl, "place", s0, e_last, 1))
                return
            if not possessive and _is_work_context(before):
                ctx.concepts.append(_Concept(wl, "work", s0, e_last, 1))
                return
            self._add_person(ctx, w, s0, e_last)
            return
        # a multi-word name
        if first in ctx.known and len(part) == 2 and words[1].lower() not in _PLACE_HEADS | _ORG_HEADS:
            self._add_person(ctx, first, s0, part[0][1])
            return
        low_words = name.lower().rstrip(".").split()
        if low_words[0] in ("the", "a", "an"):
            low_words = low_words[1:]
        if not low_words:
            return
        head = low_words[-1]
        if any(w in _ORG_HEADS for w in low_words):
            kind = "organization"
        elif head in _PLACE_HEADS or low_words[0] in _PLACE_HEADS or head in _PLACES or _is_place_context(before):
            kind = "place"
        elif _is_work_context(before) or (s0 > 0 and text[s0 - 1] in "\"'"):
            kind = "work"
        elif low_words[-1] in _NATIONALITIES or low_words[0] in _NATIONALITIES:
            kind = "topic"
        else:
            kind = "thing"
        ctx.concepts.append(_Concept(" ".join(low_words), kind, s0, e_last, 0))

    @staticmethod
    def _alias(ctx: _Ctx, word: str) -> str | None:
        """The one speaker whose name starts with ``word`` ("Mel" -> "Melanie"), if exactly one does."""
        if len(word) < 2:
            return None
        hits = [sp for sp in ctx.speakers if len(sp) > len(word) and sp.startswith(word)]
        return hits[0] if len(hits) == 1 else None

    @staticmethod
    def _person_names(ctx: _Ctx) -> list[str]:
        seen: dict[str, None] = {}
        for p in sorted(ctx.persons, key=lambda p: p.start):
            seen.setdefault(p.name, None)
        return list(seen)

    # ------------------------------------------------------------------ concepts

    def _find_concepts(self, ctx: _Ctx) -> None:
        """Activities, holidays and the objects of activity verbs (only where their words occur)."""
        low = ctx.low
        for w in sorted(ctx.words & _CONCEPT_CUES):
            for s, e in _occurrences(low, w):
                nxt = _NEXT_WORD.match(low, e)
                # activities (one or two words)
                if nxt is not None and w in _ACT_FIRST and f"{w} {nxt.group(1)}" in _ACTIVITY_SET:
                    ctx.concepts.append(_Concept(f"{w} {nxt.group(1)}", "activity", s, nxt.end(), 2))
                elif w in _ACTIVITY_SET:
                    ctx.concepts.append(_Concept(w, "activity", s, e, 2))
                # activity and preference verbs: the noun phrase after them
                trig_end, v = -1, w
                if nxt is not None and w in _MULTI_FIRST:
                    key = f"{w} {nxt.group(1)}"
                    if key in _OBJ_MULTI_PREFIX:
                        nxt2 = _NEXT_WORD.match(low, nxt.end())
                        if nxt2 is not None and f"{key} {nxt2.group(1)}" in _OBJ_MULTI:
                            trig_end, v = nxt2.end(), f"{key} {nxt2.group(1)}"
                    if trig_end < 0 and key in _OBJ_MULTI:
                        trig_end, v = nxt.end(), key
                if trig_end < 0 and w in _OBJ_KIND:
                    if w.endswith("ing") and _DET_BEFORE_RE.search(low, max(0, s - 12), s):
                        continue  # "my writing club": a modifier, not a verb
                    if nxt is not None and nxt.group(1) in _PARTICLES:
                        trig_end, v = nxt.end(), f"{w} {nxt.group(1)}"
                    else:
                        trig_end = e
                if trig_end >= 0:
                    self._object_concept(ctx, v, trig_end)
        if ctx.words & _HOLIDAY_WORDS or any(h in low for h in _HOLIDAY_PHRASES):
            for m in _HOLIDAY_RE.finditer(low):
                ctx.concepts.append(_Concept(" ".join(m.group().split()), "topic", m.start(), m.end(), 2))

    def _object_concept(self, ctx: _Ctx, v: str, pos: int) -> None:
        low = ctx.low
        np = self._noun_phrase(low, pos, len(low), stops=ctx.pstarts)
        if np is None:
            return
        name, s, e, det = np
        if not det and (v.split()[0] in _PREF_VERBS or _OBJ_KIND.get(v.split()[0]) == "activity"):
            name = self._with_object(low, name, e, len(low))
            e = s + len(name) if low.startswith(name, s) else e
        if v.endswith(" to") and not det and name.split()[0] in _COMMON_VERBS:
            return  # "went to see ...", "a trip to connect with ...": an infinitive, not a place
        vfirst = v.split()[0]
        kind = _OBJ_KIND.get(vfirst, "thing")
        if vfirst in _MOTION_KIND:
            kind = "place" if name.split()[-1] in _PLACE_HEADS else "thing"
        if name in _ACTIVITY_SET or (name.split()[0].endswith("ing") and name.split()[0] not in _VAGUE):
            kind = "activity"  # "hiking", "hitting the gym"
        elif kind == "activity" or (kind == "place" and name.split()[-1] not in _PLACE_HEADS and det):
            kind = "thing"
        ctx.concepts.append(_Concept(name, kind, s, e, 3))

    def _noun_phrase(self, low: str, pos: int, end: int, *, allow_vague: bool = False,
                     stops: frozenset[int] = frozenset()) -> tuple[str, int, int, str] | None:  # fmt: skip
        """The noun phrase starting at ``pos``: ``(name, start, end, determiner)``, or None.

        Determiners and evaluative adjectives are skipped; the phrase stops at a
        function word, punctuation or after five words (one inner ``of`` allowed).
        """
        det = ""
        toks: list[tuple[int, int]] = []
        last_end = pos
        has_of = False
        for m in _NP_TOKEN.finditer(low, pos, min(end, pos + 120)):
            gap = low[last_end : m.start()]
            if gap and not gap.isspace():
                break
            if toks == [] and gap.count(" ") > 1 and last_end != pos:
                break
            w = m.group()
            if m.start() in stops:
                break
            if "'" in w:  # contractions end a phrase: "everyone's gotta", "it's"
                base = w.split("'")[0]
                if base in _NP_STOP or base in _GENERIC_PEOPLE or not w.endswith("'s"):
                    break
            if not toks:
                if w in _DETERMINERS or w in _NP_SKIP or w.endswith("ly") and w not in ("family", "july", "italy"):
                    if w in _DETERMINERS:
                        det = det or w
                    last_end = m.end()
                    continue
                if w in _NP_STOP or (w.endswith("ed") and w not in _ED_NOUNS):
                    return None
            else:
                if w == "of" and not has_of and len(toks) <= 2:
                    has_of = True
                    toks.append((m.start(), m.end()))
                    last_end = m.end()
                    continue
                if w in _NP_STOP or w.endswith("ly") and w not in ("family", "july", "italy") or len(toks) >= 5:
                    break
                if w.endswith("ed") and w not in ("seed", "bed", "red", "need", "feed", "speed") and len(toks) >= 1:
                    break
            toks.append((m.start(), m.end()))
            last_end = m.end()
        while toks and low[toks[-1][0] : toks[-1][1]] in _TRAIL_WORDS | _NP_SKIP:
            toks.pop()
        if not toks:
            return None
        s, e = toks[0][0], toks[-1][1]
        name = low[s:e]
        words = name.split()
        has_of = "of" in words
        if words[-1] in _PERSON_NOUNS:
            return None
        if words[-1] in _VAGUE and not allow_vague:
            if has_of:
                i = words.index("of")
                if i + 1 < len(words):
                    rest = words[i + 1 :]
                    if rest and rest[-1] not in _VAGUE and rest[0] not in _NP_STOP:
                        return " ".join(rest), e - len(" ".join(rest)), e, det
            return None
        if words[0] in _VAGUE and has_of:
            rest = words[words.index("of") + 1 :]
            if rest:
                return " ".join(rest), e - len(" ".join(rest)), e, det
        if all(w in _NP_STOP or w.isdigit() for w in words) or len(name) < 2:
            return None
        return name, s, e, det

    def _fallback_concepts(self, ctx: _Ctx) -> None:
        """Up to two determiner noun phrases as ``topic`` concepts (a turn that found nothing else)."""
        n = 0
        seen = set()
        for m in _DET_NP_RE.finditer(ctx.low):
            np = self._noun_phrase(ctx.low, m.end(), len(ctx.low), stops=ctx.pstarts)
            if np is None or np[0] in seen:
                continue
            seen.add(np[0])
            ctx.concepts.append(_Concept(np[0], "topic", np[1], np[2], 4))
            n += 1
            if n >= 2:
                return
        if n == 0:  # no determiner phrase: the longest run of content words
            best: tuple[int, int] = (0, 0)
            run: tuple[int, int] | None = None
            for m in _NP_TOKEN.finditer(ctx.low):
                w = m.group()
                content = not (w in _NP_STOP or w in _VAGUE or w in _EVAL or w in _CHITCHAT_WORDS or w in _PERSON_NOUNS
                               or len(w) < 3 or "'" in w or w.endswith(_ADJ_SUFFIXES))  # fmt: skip
                if content and run is not None and ctx.low[run[1] : m.start()] == " " and m.start() - run[0] < 40:
                    run = (run[0], m.end())
                elif content:
                    run = (m.start(), m.end())
                else:
                    run = None
                if run is not None and run[1] - run[0] > best[1] - best[0]:
                    best = run
            if best[1] - best[0] >= 4:
                ctx.concepts.append(_Concept(ctx.low[best[0] : best[1]], "topic", best[0], best[1], 5))

    @staticmethod
    def _concept_records(ctx: _Ctx) -> list[ExtractedConcept]:
        persons_low = {p.name.lower() for p in ctx.persons} | {ctx.speaker.lower()}
        best: dict[str, _Concept] = {}
        order: list[str] = []
        for c in sorted(ctx.concepts, key=lambda c: (c.start, c.prio)):
            name = " ".join(c.name.split())
            if not name or name in persons_low or len(name) > 80:
                continue
            if name not in best:
                best[name] = c
                order.append(name)
            elif c.prio < best[name].prio:
                best[name] = c._replace(start=best[name].start)
        tid = ctx.turn.id
        return [ExtractedConcept(name=n, source_turn_id=tid, kind=best[n].kind) for n in order]

    # ------------------------------------------------------------------ events

    def _time_in(self, ctx: _Ctx, lo: int, hi: int) -> TimeMention | None:
        for tm in ctx.times:
            if tm.span[0] >= lo and tm.span[1] <= hi:
                return tm
        return None

    def _find_events(self, ctx: _Ctx, sent_clauses: list[list[tuple[int, int]]]) -> list[ExtractedEvent]:
        low = ctx.low
        events: list[ExtractedEvent] = []
        has_subject = bool(ctx.words & _EVENT_SUBJECTS)
        for (sb, _), clauses in zip(ctx.sents, sent_clauses, strict=True):
            for cb, ce in clauses:
                if not has_subject and cb != sb:
                    continue
                matches = list(_EVENT_RE.finditer(low, cb, ce)) if has_subject else []
                # "Jon and I": the subject starts at "Jon" (not at "yesterday" in "yesterday and I'll ...")
                starts = []
                for m in matches:
                    coord = _COORD_BEFORE_RE.search(low, max(cb, m.start() - 25), m.start()) if m.group("subj") == "i" else None
                    starts.append(coord.start() if coord is not None and coord.group(1) not in _COMMON else m.start())
                if cb == sb and not matches or (matches and matches[0].start() > cb and cb == sb):
                    bare = _BARE_PAST_RE.match(low, cb, ce)
                    if bare is not None and bare.group("past") not in _ED_ADJ:
                        matches.insert(0, bare)
                        starts.insert(0, cb)
                for k, m in enumerate(matches):
                    win_lo = cb if k == 0 else starts[k]
                    win_hi = starts[k + 1] if k + 1 < len(matches) else ce
                    ev = self._event(ctx, m, win_lo, win_hi, sb, starts[k])
                    if ev is not None:
                        events.append(ev)
        return events

    def _event(self, ctx: _Ctx, m: re.Match[str], win_lo: int, win_hi: int, sent_b: int,
               subj_lo: int) -> ExtractedEvent | None:  # fmt: skip
        low, text = ctx.low, ctx.text
        subj = m.group("subj")
        poss = m.group("poss")
        verb_word = m.group("past") or m.group("pp") or m.group("fut") or m.group("prog")
        if verb_word is None:
            return None
        tm = self._time_in(ctx, win_lo, win_hi)
        if tm is None:  # a time expression before the clause, in the same sentence ("Last week, ... I went")
            for t in ctx.times:
                if sent_b <= t.span[0] and t.span[1] <= win_lo:
                    tm = t
        # the verb
        fut = m.group("fut")
        vstart = m.start("past") if m.group("past") else m.start("pp") if m.group("pp") else (
            m.start("fut") if fut else m.start("prog"))  # fmt: skip
        if fut is not None:
            if _DESIRE.search(m.group()):
                return None  # "I want to ...": a wish, not an event
            if fut in ("never", "not"):
                return None
            if fut in _DETERMINERS:  # "I'm going to the park"
                verb = "go"
                g = max(m.group().rfind("going"), m.group().rfind("gonna"))
                vstart = m.start() + g if g >= 0 else vstart
            else:
                verb = _IRREGULAR.get(fut, fut)
                if verb in ("be", "have") and tm is None:
                    return None
        elif m.group("prog") is not None:
            prog = m.group("prog")
            if prog not in _MOTION_PROG and tm is None:
                return None
            verb = _lemma(prog)
        elif m.group("pp") is not None:
            pp = m.group("pp")
            if pp.startswith("been to"):
                verb = "go"
            elif pp.startswith("been "):
                verb = _lemma(pp.split()[1])
            else:
                if pp in _AMBIGUOUS_PAST and tm is None:
                    return None
                verb = _lemma(pp)
        else:
            past = m.group("past")
            if past in _AMBIGUOUS_PAST and tm is None:
                return None
            verb = _lemma(past)
        if verb in _STATIVE or not verb.isalpha() or len(verb) < 2:
            return None
        prev = _PREV_WORD_RE.search(low, max(0, subj_lo - 30), subj_lo)
        prev_word = prev.group(1) if prev and not prev.group(2) else ""
        if prev_word in _SUBORDINATORS:
            return None  # "since we last talked", "if I go": not a reported event
        kin_subject = None
        subj_hi = m.end("subj")
        if poss is not None and not subj.endswith(" i") and prev_word and prev_word not in _POSS_SUBJ_PREV:
            return None  # "I played one of my songs ...": "my songs" is an object, not a subject
        if poss is not None and not subj.endswith(" i"):
            head = poss.split()[-1]
            if head in _STATIVE or head in _NP_STOP or head in ("favorite", "favourite"):
                return None
            for p in ctx.persons:
                if subj_lo <= p.start < subj_hi:
                    kin_subject = p.name
                    break
            if kin_subject is None:
                if head in _NAMED_ONLY - _PETS or head in _PERSON_NOUNS:
                    return None  # "my friend ..." without a name: not the speaker's event
                vstart = m.start("poss")  # "my car broke down" -> "car broke down"
        # text: from the verb to the end of the window, time expressions removed, at most 12 words
        cut = _REST_CUT_RE.search(low, vstart, win_hi)
        hi = cut.start() if cut is not None and cut.group() != "," else win_hi
        pieces = []
        pos = vstart
        for t in ctx.times:
            if t.span[0] >= pos and t.span[1] <= hi:
                pieces.append(text[pos : t.span[0]])
                pos = t.span[1]
        pieces.append(text[pos:hi])
        words = " ".join(pieces).split()[:12]
        while words and words[-1].lower().strip(_TRAIL_STRIP + ".!?") in _EVENT_TRAIL:
            words.pop()
        desc = " ".join(words).strip(_TRAIL_STRIP + ".!?")
        if not desc or (" " not in desc and verb not in _INTRANSITIVE):
            return None
        # participants: the speaker (or the kin subject), then the people named in the clause
        participants: list[str] = [kin_subject or ctx.speaker]
        for p in ctx.persons:
            if subj_lo <= p.start < hi and p.name not in participants and p.start not in ctx.vocatives:
                participants.append(p.name)
        concepts = []
        for c in ctx.concepts:
            if subj_lo <= c.start and c.end <= hi and c.name not in concepts:
                concepts.append(c.name)
        return ExtractedEvent(
            text=desc,
            participants=tuple(participants),
            source_turn_id=ctx.turn.id,
            start=tm.start if tm else None,
            end=tm.end if tm else None,
            time_text=tm.text if tm else None,
            concepts=tuple(concepts),
            verb=verb,
        )

    # ------------------------------------------------------------------ facts

    def _np_after(self, ctx: _Ctx, pos: int, end: int, *, allow_vague: bool = False) -> str | None:
        np = self._noun_phrase(ctx.low, pos, end, allow_vague=allow_vague, stops=ctx.pstarts)
        return np[0] if np else None

    def _valid_from(self, ctx: _Ctx, b: int, e: int) -> datetime | None:
        tm = self._time_in(ctx, b, e)
        return tm.start if tm else None

    def _fact(self, ctx: _Ctx, facts: list[ExtractedFact], pred: str, obj: str, text: str, b: int, e: int) -> None:
        obj = " ".join(obj.split()).strip(_TRAIL_STRIP + ".!?")
        if obj and pred in _CONCEPT_FACTS and len(obj.split()) <= 6 and not any(c.name == obj for c in ctx.concepts):
            kind = _CONCEPT_FACTS[pred]
            if obj in _ACTIVITY_SET or (obj.endswith("ing") and " " not in obj):
                kind = "activity"
            ctx.concepts.append(_Concept(obj, kind, e, e, 3))
        if obj:
            facts.append(ExtractedFact(subject=ctx.speaker, predicate=pred, object=obj, text=text,
                                       source_turn_id=ctx.turn.id, valid_from=self._valid_from(ctx, b, e)))  # fmt: skip

    def _find_facts(self, ctx: _Ctx, b: int, e: int, facts: list[ExtractedFact]) -> None:
        low, text = ctx.low, ctx.text
        seg = low[b:e]
        sp = ctx.speaker
        if "i" not in seg and "my" not in seg and "we" not in seg:
            return
        # pets
        if ctx.words & _PETS:
            got = False
            for m in _HAVE_PET_RE.finditer(text, b, e):
                pet = m.group("pet").lower()
                name = m.group("name")
                num = m.group("num").lower()
                obj = f"{pet} named {name}" if name else (pet if num in ("a", "an", "one") else f"{num} {pet}")
                self._fact(ctx, facts, "has", obj, f"{sp} has a {pet}" + (f" named {name}" if name else ""), m.start(), m.end())
                got = True
            for m in _PET_NAMED_RE.finditer(text, b, e):
                if not (m.group("own") or got):
                    continue
                pet = (m.group("pet") or m.group("pet2")).lower()
                for name in (m.group("name"), m.group("name2")):
                    if name and name.lower() not in _COMMON and name not in ctx.known:
                        self._fact(ctx, facts, "has", f"{pet} named {name}", f"{sp} has a {pet} named {name}", m.start(), m.end())
        if "i" in seg:
            if "'m a" in seg or "am a" in seg or "work" in seg or "job" in seg:
                for m in _JOB_RE.finditer(low, b, e):
                    job = m.group("job") or m.group("job2") or m.group("job3")
                    job = " ".join(w for w in job.split() if w not in _NP_SKIP or w in ("assistant",))
                    if job and job.split()[-1] not in ("fan", "bit", "lot", "mess", "little"):
                        pred = "works_as" if job.split()[-1] in _JOBS or m.group("job2") or m.group("job3") else "is"
                        self._fact(ctx, facts, pred, job, f"{sp} works as {job}" if pred == "works_as" else f"{sp} is {job}", m.start(), m.end())
                for m in _WORK_AT_RE.finditer(low, b, e):
                    org = self._org_after(ctx, m.start("rest"), e)
                    if org:
                        self._fact(ctx, facts, "works_at", org, f"{sp} works at {org}", m.start(), e)
            if "allerg" in seg:
                for m in _ALLERGY_RE.finditer(low, b, e):
                    st = m.start("rest") if m.group("rest") else m.start("rest2")
                    obj = self._np_after(ctx, st, e, allow_vague=True)
                    if obj:
                        self._fact(ctx, facts, "allergic_to", obj, f"{sp} is allergic to {obj}", m.start(), e)
            if "live" in seg or "moved" in seg or "relocated" in seg:
                for m in _LIVE_RE.finditer(low, b, e):
                    place = self._org_after(ctx, m.start("rest"), e)
                    if place:
                        self._fact(ctx, facts, "lives_in", place, f"{sp} lives in {place}", m.start(), e)
            if "from" in seg or "grew up" in seg or "born" in seg:
                for m in _FROM_RE.finditer(low, b, e):
                    st = m.start("rest") if m.group("rest") else m.start("rest2")
                    place = self._org_after(ctx, st, e)
                    if place:
                        self._fact(ctx, facts, "from", place, f"{sp} is from {place}", m.start(), e)
            if "play" in seg:
                for m in _PLAYS_RE.finditer(low, b, e):
                    obj = self._np_after(ctx, m.start("rest"), e)
                    if obj and obj not in ("it", "that", "with"):
                        self._fact(ctx, facts, "plays", obj, f"{sp} plays {obj}", m.start(), e)
            if "'m " in seg or " am " in seg:
                for m in _STATUS_RE.finditer(low, b, e):
                    status = " ".join(m.group("st").split())
                    status = status[2:] if status.startswith("a ") else status
                    self._fact(ctx, facts, "is", status, f"{sp} is {status}", m.start(), m.end())
            if any(a in seg for a in ("usually", "always", "often", "normally", "regularly", "sometimes", "generally",
                                      "typically", "frequently", "occasionally", "tend to")):  # fmt: skip
                for m in _HABIT_RE.finditer(low, b, e):
                    rest = self._clause_rest(low, m.start("rest"), e)
                    first = rest.split()[0] if rest else ""
                    past = first.endswith("ed") or (first in _IRREGULAR and _IRREGULAR[first] != first)
                    if rest and not past and first not in _STATIVE and first not in ("be", "have", "get", "feel", "think", "find"):
                        self._fact(ctx, facts, "habit", rest, f"{sp} {m.group('adv')} {rest}", m.start(), e)
            if "been" in seg and (" for " in seg or " since " in seg):
                for m in _BEEN_FOR_RE.finditer(low, b, e):
                    ing = m.group("ing")
                    if _lemma(ing) in _STATIVE or ing in ("going", "doing", "thinking", "feeling", "trying", "looking"):
                        continue
                    obj = self._clause_rest(low, m.start("ing"), m.start("dur"))
                    self._fact(ctx, facts, "habit", obj, f"{sp} has been {obj} {m.group('dur')}", m.start(), e)
            if "every" in seg or "daily" in seg or "weekly" in seg or " a week" in seg or " a month" in seg:
                for m in _EVERY_RE.finditer(low, b, e):
                    v = m.group("verb")
                    if v in _STATIVE or v in _NP_STOP or _lemma(v) in _STATIVE or v.endswith("ed") or v in _IRREGULAR:
                        continue
                    obj = f"{v}{m.group('obj')} {m.group('freq')}".strip()
                    self._fact(ctx, facts, "habit", obj, f"{sp} {obj}", m.start(), m.end())
        if "favo" in seg:
            for m in _FAV_RE.finditer(low, b, e):
                cat = m.group("cat").strip()
                obj = self._name_after(ctx, m.start("rest"), cat) or self._org_after(ctx, m.start("rest"), e)
                if obj:
                    self._fact(ctx, facts, "favorite", obj, f"{sp}'s favorite {cat} is {obj}", m.start(), e)
            for m in _FAV_REV_RE.finditer(low, b, e):
                np = m.group("np").split()
                while np and (np[0] in _NP_STOP or np[0] in _DETERMINERS):
                    np = np[1:]
                if np and len(np) <= 5:
                    obj = " ".join(np)
                    cat = m.group("cat") or "thing"
                    self._fact(ctx, facts, "favorite", obj, f"{sp}'s favorite {cat} is {obj}", m.start(), m.end())

    def _name_after(self, ctx: _Ctx, pos: int, cat: str) -> str | None:
        """A person's name at ``pos`` as a favourite; a title ("my favorite book is Dune") becomes a work."""
        for i, p in enumerate(ctx.persons):
            if pos <= p.start <= pos + 5:
                if cat.split()[-1] in _WORK_CATS:
                    del ctx.persons[i]
                    name = p.name.lower()
                    ctx.concepts.append(_Concept(name, "work", p.start, p.end, 0))
                    return name
                return p.name
        return None

    def _org_after(self, ctx: _Ctx, pos: int, end: int) -> str | None:
        """The name starting at ``pos``: a capitalised name or the noun phrase there (the longer)."""
        for p in ctx.persons:
            if pos <= p.start <= pos + 5:
                return None
        np = self._np_after(ctx, pos, end, allow_vague=True)
        for c in ctx.concepts:
            if pos <= c.start <= pos + 5 and c.prio <= 1 and (np is None or len(c.name) >= len(np) or c.name not in np):
                return c.name
        return np

    @staticmethod
    def _clause_rest(low: str, pos: int, end: int) -> str:
        """The words from ``pos`` to the end of their clause (at most eight)."""
        m = _CLAUSE_SPLIT_RE.search(low, pos, end)
        stop = m.start() if m else end
        m = _REST_CUT_RE.search(low, pos, stop)
        stop = m.start() if m else stop
        words = low[pos:stop].split()[:8]
        while words and words[-1].strip(_TRAIL_STRIP + ".!?") in _TRAIL_WORDS:
            words.pop()
        return " ".join(words).strip(_TRAIL_STRIP + ".!?")

    @staticmethod
    def _dedupe_facts(facts: list[ExtractedFact]) -> list[ExtractedFact]:
        seen: set[tuple[str, str, str]] = set()
        out = []
        for f in facts:
            key = (f.subject, f.predicate, f.object)
            if key not in seen:
                seen.add(key)
                out.append(f)
        return out

    # ------------------------------------------------------------------ claims

    @staticmethod
    def _is_question(low: str, b: int, e: int) -> bool:
        seg = low[b:e].rstrip()
        return seg.endswith("?") or bool(_QUESTION_START.match(seg))

    def _polarity(self, clause: str, lexical: int) -> tuple[int, float]:
        """Polarity and sentiment: VADER's, or the lexical cue's where VADER is neutral or (for a
        preference verb, ``lexical`` given as +-2) contradicts it."""
        c = _sentiment(clause)
        pol = 1 if c >= 0.05 else -1 if c <= -0.05 else 0
        lex = max(-1, min(1, lexical))
        if lex and (pol == 0 or (abs(lexical) == 2 and pol != lex)):
            return lex, 0.5 * lex
        return pol, round(c, 4)

    def _resolve_pronoun(self, ctx: _Ctx, word: str, before: int) -> str | None:
        w = word.lower()
        if w in ("you", "u", "ya", "you're", "your", "yourself"):
            return ctx.addressee
        if w in ("i", "me", "myself", "we", "us"):
            return ctx.speaker
        if w in _PRONOUN_PERSON:  # the last person (or pet) named before
            cands = [(p.start, p.name) for p in ctx.persons if p.start < before and p.start not in ctx.vocatives]
            cands += [(c.start, c.name) for c in ctx.concepts if c.start < before and c.name in ctx.pet_names]
            if cands:
                return max(cands)[1]
            return ctx.prev_persons[-1] if ctx.prev_persons else None
        if w in _PRONOUN_THING:
            best = None
            for c in ctx.concepts:
                if c.end <= before and (best is None or c.start > best.start) and c.prio <= 3:
                    best = c
            if best is not None:
                return best.name
            return ctx.prev_concepts[0] if ctx.prev_concepts else None  # the previous turn's first topic
        return None

    def _subject_before(self, ctx: _Ctx, cb: int, pos: int) -> str | None:
        """The noun phrase (or resolved pronoun) right before ``pos`` in the clause ``[cb, pos)``."""
        low = ctx.low
        toks = [m for m in _NP_TOKEN.finditer(low, cb, pos)]
        if not toks:
            return None
        last = toks[-1].group()
        if last.endswith("'s") or last.endswith("'re"):
            last = last.rsplit("'", 1)[0]
        # a person right there
        last_start = toks[-1].start()
        for p in ctx.persons:
            if p.start <= last_start < p.end or last_start <= p.start < pos:
                return p.name
        if last in _PRONOUN_THING or last in _PRONOUN_PERSON or last in ("you", "i", "we", "u"):
            return self._resolve_pronoun(ctx, last, toks[-1].start())
        words: list[str] = []
        start = pos
        for m in reversed(toks):
            w = m.group()
            if words and not low[m.end() : start].isspace():
                break  # punctuation ends the subject ("Hey Calvin, photography is great")
            if w.endswith("'s") and words:
                break
            if w in _NP_STOP or w in _DETERMINERS or w in _NP_SKIP:
                break
            words.insert(0, w)
            start = m.start()
            if len(words) >= 4:
                break
        if not words:
            return None
        # a name covering the subject ("Little Fern is great"), else the whole noun phrase
        name = " ".join(words)
        for c in ctx.concepts:
            if c.prio <= 3 and (c.start <= start < c.end or (start <= c.start < pos and (c.prio <= 1 or c.name == name))):
                return c.name
        if words[-1] in _VAGUE or words[-1] in _GENERIC_PEOPLE:
            return None
        ctx.concepts.append(_Concept(name, "thing", start, start + len(name), 3))
        return name

    def _target_np(self, ctx: _Ctx, pos: int, end: int) -> tuple[str | None, bool]:
        """Target of a preference verb at ``pos``: ``(name, generic)``."""
        low = ctx.low
        for p in ctx.persons:
            if pos <= p.start <= pos + 5:
                return p.name, False
        for c in ctx.concepts:
            if pos <= c.start <= pos + 4 and c.prio <= 1:
                return c.name, c.kind == "activity"
        m = _NP_TOKEN.match(low, pos)
        if m is None:
            return None, False
        w = m.group()
        if w == "to":  # "love to paint", "like to go hiking"
            m2 = _NP_TOKEN.match(low, m.end() + 1)
            if m2 is None:
                return None, False
            v = m2.group()
            if v in ("go", "do"):
                m3 = _NP_TOKEN.match(low, m2.end() + 1)
                if m3 and m3.group().endswith("ing"):
                    return m3.group(), True
            if v in _NP_STOP or v in _STATIVE:
                return None, False
            g = _gerund(v)
            obj = self._noun_phrase(low, m2.end() + 1, end)
            return (f"{g} {obj[0]}" if obj and v not in ("go",) and len(obj[0].split()) <= 2 and g not in _ACTIVITY_SET else g), True
        if w in ("you", "ya", "u", "it", "that", "this", "them", "him", "her", "these", "those", "how", "when",
                 "the way", "what", "seeing", "hearing", "watching"):  # fmt: skip
            if w in ("how", "what", "when") or w in ("seeing", "hearing", "watching"):
                rest = self._noun_phrase(low, m.end() + 1, end)
                for c in ctx.concepts:
                    if m.end() <= c.start < end and c.prio <= 3:
                        return c.name, False
                return (ctx.addressee if w == "how" else (rest[0] if rest else None)), False
            nxt = _NP_TOKEN.match(low, m.end() + 1)
            if w in ("that", "this", "these", "those") and nxt and (nxt.group() not in _NP_STOP or nxt.group() in _NP_SKIP):
                np = self._noun_phrase(low, pos, end)  # "that café", "this new journey"
                return (np[0] if np else None), False
            return self._resolve_pronoun(ctx, w, pos), False
        np = self._noun_phrase(low, pos, end)
        if np is None:
            return None, False
        name, _, np_end, det = np
        if not det:
            name = self._with_object(low, name, np_end, end)
        generic = det in ("", "some", "any") or name in _ACTIVITY_SET or name.split()[0].endswith("ing")
        if det in ("the", "that", "this", "these", "those", "your", "his", "her", "their"):
            generic = name in _ACTIVITY_SET
        return name, generic

    def _with_object(self, low: str, name: str, name_end: int, end: int) -> str:
        """A bare gerund with its object: "creating a serene space", "learning about cultures"."""
        if " " in name or not name.endswith("ing") or name in _VAGUE:
            return name
        obj = (_GERUND_DOBJ_RE if name in _ACTIVITY_SET else _GERUND_OBJ_RE).match(low, name_end, end)
        if obj is None:
            return name
        rest = self._noun_phrase(low, obj.end(), end)
        if rest is None:
            return name
        return " ".join(low[name_end - len(name) : rest[2]].split()[:6])

    @staticmethod
    def _claim_gates(ctx: _Ctx) -> frozenset[str]:
        """Which claim rules can fire anywhere in the turn (cheap word-set tests)."""
        w = ctx.words
        gates = set()
        if w & _REPORT_WORDS:
            gates.add("report")
        if w & _FRAME_WORDS or "to me" in ctx.low or "ask me" in ctx.low:
            gates.add("frame")
        if w & _PREF_WORDS:
            gates.add("pref")
        if w & _EVAL_WORDS:
            gates.add("eval")
        if w & _EMOTION_WORDS:
            gates.add("emotion")
        return frozenset(gates)

    def _claim(self, ctx: _Ctx, cb: int, ce: int, facts: list[ExtractedFact], gates: frozenset[str]) -> ExtractedClaim | None:
        """At most one claim from the clause ``[cb, ce)``."""
        low, text = ctx.low, ctx.text
        source = ctx.speaker
        predicate: str | None = None
        target: str | None = None
        lexical = 0
        body = cb
        reported = False
        # reported opinions: "Mom thinks ...", "my sister loves ...", "Josh says ..."
        if "report" in gates:
            for vm in _REPORT_VERB_RE.finditer(low, cb, ce):
                m = _REPORTER_RE.search(text, max(cb, vm.start() - 60), vm.start())
                if m is None:
                    continue
                who = None
                if m.group("rel"):
                    owner = self._owner(ctx, m.group("own"))
                    if owner:
                        who = f"{owner}'s {_KIN_NORMAL[m.group('rel').lower()]}"
                else:
                    name = m.group("name")
                    if name in _CAP_KIN:
                        who = f"{ctx.speaker}'s {_CAP_KIN[name]}"
                    elif name in ctx.known or any(p.name == name for p in ctx.persons):
                        who = name
                if who and who != ctx.speaker:
                    source, reported, body = who, True, vm.end()
                    verb = " ".join(vm.group("verb").split())
                    if verb in _PREF_VERBS:
                        lexical = 2 * _PREF_VERBS[verb]
                        target, generic = self._target_np(ctx, vm.end(), ce)
                        predicate = "preference" if generic else "opinion"
                    break
        if predicate is None:
            fm = _FRAME_RE.search(low, body, ce) if "frame" in gates and not reported else None
            inner_lo = fm.end() if fm is not None else body
            framed = fm is not None or reported
            has_eval = "eval" in gates and _EVAL_ANY_RE.search(low, inner_lo, ce) is not None
            if fm is not None and fm.group("verb") == "doubt":
                lexical = -1
            # preference verbs, in the frame's clause or the plain clause
            pm = _PREF_RE.search(low, inner_lo, ce) if "pref" in gates else None
            if pm is not None and low[max(0, pm.start("verb") - 3) : pm.start("verb")] in ("'d ", "ld "):
                pm = None  # "I'd like ...", "I would love ...": a wish
            if pm is not None:
                vpol = _PREF_VERBS[" ".join(pm.group("verb").split())]
                if pm.group("neg"):
                    vpol = -vpol
                target, generic = self._target_np(ctx, pm.start("rest"), ce)
                if target is not None:
                    lexical = 2 * vpol
                    predicate = "preference" if generic else "opinion"
                    if generic and not reported and pm.group("subj") == "i" and target != ctx.addressee:
                        pred = "likes" if vpol > 0 else "dislikes"
                        self._fact(ctx, facts, pred, target, f"{ctx.speaker} {pred} {target}", cb, ce)
            if predicate is None and has_eval:
                em = _EVAL_PRED_RE.search(low, inner_lo, ce)
                if em is not None:
                    expletive = _EXPLETIVE_RE.match(low, em.end(), ce)
                    if expletive is not None and _EXPLETIVE_SUBJ_RE.search(low, inner_lo, em.start()):
                        if expletive.group(1) == "to":  # "It's great to collaborate ..." -> "collaborating"
                            target = self._target_np(ctx, expletive.start(1), ce)[0]
                        else:  # "It's great how you ..." -> the subject of the clause
                            target = self._belief_target(ctx, expletive.end(), ce)
                    else:
                        target = self._subject_before(ctx, inner_lo, em.start())
                    if target is not None:
                        predicate = "opinion"
                        lexical = _EVAL[em.group("adj")]
                        if _NEGATION_RE.search(low, max(cb, em.start() - 4), em.start("adj")):
                            lexical = -lexical
                if predicate is None:
                    wm = _WHAT_A_RE.match(low, inner_lo, ce)
                    if wm is not None:
                        np = self._noun_phrase(low, wm.start("np") + 1, ce)
                        if np:
                            target, predicate, lexical = np[0], "opinion", _EVAL[wm.group("adj")]
            if predicate is None and "emotion" in gates:
                om = _EMOTION_OF_RE.search(low, inner_lo, ce)
                if om is not None and _SELF_RE.search(low, inner_lo, om.start()):
                    t, _generic = self._target_np(ctx, om.end(), ce)
                    if t is not None:
                        target, predicate = t, "opinion"
                        lexical = _EMOTION_POLARITY.get(om.group("pred").split()[0], 0)
            if predicate is None and framed:
                # "I think we should go": a belief about the clause's subject (or first concept);
                # "I think it's important to rest": about resting
                xm = _EXPL_FRAME_RE.match(low, inner_lo, ce)
                if xm is not None:
                    target = (self._target_np(ctx, xm.start(1), ce)[0] if xm.group(1) == "to"
                              else self._belief_target(ctx, xm.end(), ce))  # fmt: skip
                else:
                    target = self._belief_target(ctx, inner_lo, ce)
                if target is not None:
                    predicate = "opinion" if has_eval else "belief"
            if fm is not None and predicate == "opinion" and pm is None and not has_eval:
                predicate = "belief"  # "I think the store is closed": about a fact
        if predicate is None or not target:
            return None
        if target == source:
            return None
        clause = text[cb:ce].strip()
        pol, sent = self._polarity(clause, lexical)
        is_person = target in ctx.known or target in (ctx.addressee, ctx.speaker) or any(p.name == target for p in ctx.persons)
        # a target resolved from an earlier turn is not re-mentioned here: no concept for it
        if not is_person and target in low and not any(c.name == target for c in ctx.concepts):
            kind = "activity" if target in _ACTIVITY_SET or (target.endswith("ing") and " " not in target) else "thing"
            ctx.concepts.append(_Concept(target, kind, ce, ce, 3))
        sent_b, sent_e = next(((b, e) for b, e in ctx.sents if b <= cb < e), (cb, ce))
        content = text[sent_b:sent_e].strip() or clause
        return ExtractedClaim(
            source=source,
            target=target,
            predicate=predicate,
            polarity=pol,
            content=content,
            source_turn_id=ctx.turn.id,
            sentiment=sent,
            timestamp=ctx.turn.timestamp,
        )

    def _belief_target(self, ctx: _Ctx, lo: int, hi: int) -> str | None:
        low = ctx.low
        m = _NP_TOKEN.search(low, lo, hi)
        if m is None:
            return None
        w = m.group()
        base = w.split("'")[0]
        if base in ("you", "u", "i", "we") or base in _PRONOUN_PERSON:
            return self._resolve_pronoun(ctx, base, m.start())
        for p in ctx.persons:
            if m.start() <= p.start <= m.start() + 5:
                return p.name
        if base in _PRONOUN_THING:
            return self._resolve_pronoun(ctx, base, m.start())
        np = self._noun_phrase(low, m.start(), hi)
        if np is not None:
            words = np[0].split()
            if len(words) >= 2 and words[-1].endswith("s") and not words[-1].endswith("ss") and not words[-2].endswith("s"):
                np = (" ".join(words[:-1]), np[1], np[2] - len(words[-1]) - 1, np[3])  # "the store closes"
            for c in ctx.concepts:  # a name covering the subject
                if c.start <= np[1] < c.end and c.prio <= 1:
                    return c.name
            return np[0]
        for c in sorted(ctx.concepts, key=lambda c: c.start):
            if lo <= c.start < hi and c.prio <= 3:
                return c.name
        return None
