"""Lexicons, gazetteers and compiled patterns of the rule-based extractor.

Data only, built once at import time and never mutated: the small-talk vocabulary
and stoplists, kin, pet and person nouns, gazetteers (countries, states, cities,
nationalities, brands, holidays, activities, jobs), the heads of place and
organisation names, evaluative adjectives and preference verbs, the irregular-verb
and stem tables of the lemmatiser, and the compiled regular expressions that the
stages of :class:`~langmem_cog.graph.rules.extractor.RuleExtractor` match with.

Word sets are ``frozenset`` objects of lower-cased words built with :func:`_words`;
patterns that embed a word list use :func:`_alt` (longest alternative first, so
"new year" wins over "new"). The names in ``__all__`` are the tables the other
modules of :mod:`langmem_cog.graph.rules` read (:mod:`~langmem_cog.graph.rules.text`,
:mod:`~langmem_cog.graph.rules.entities`, :mod:`~langmem_cog.graph.rules.statements`,
:mod:`~langmem_cog.graph.rules.mentions`, :mod:`~langmem_cog.graph.rules.facts`,
:mod:`~langmem_cog.graph.rules.claims` and :mod:`~langmem_cog.graph.rules.extractor`);
the building blocks used only here
(regex fragments, the raw lists behind a set) keep a leading underscore.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable

__all__ = [
    "CHITCHAT_WORDS", "COMMON", "CAP_BREAK", "KIN_NORMAL", "NAMED_ONLY", "KIN_RE", "OWNERS", "RELATIONS",
    "POSS_KIN_RE", "CAP_KIN", "PETS", "PET_NAMED_RE", "PET_CUES", "NAME_COMMA_PET_RE", "NAME_IS_RE", "CAP_NAME_RE",
    "HAVE_PET_RE", "NATIONALITIES", "PLACES", "PLACE_ACRONYMS", "BRANDS", "HOLIDAY_RE", "ACTIVITY_SET", "PLACE_HEADS",
    "ORG_HEADS", "LOC_PREV", "MOTION_TO", "BE_FROM", "WORK_PREV", "EVAL", "EVAL_PRED_RE", "WHAT_A_RE", "EVAL_ANY_RE",
    "EMOTION_OF_RE", "EMOTION_POLARITY", "PREF_VERBS", "PREF_RE", "USED_TO_TURNED_RE", "FRAME_RE", "REPORT_VERB_RE", "REPORTER_RE",
    "REPORT_WORDS", "FRAME_WORDS", "PREF_WORDS", "EVAL_WORDS", "EMOTION_WORDS", "EXPLETIVE_RE", "EXPLETIVE_SUBJ_RE",
    "EXPL_FRAME_RE", "NEGATION_RE", "ROLLING_SPAN_RE", "SELF_RE", "QUESTION_START", "JOBS", "JOB_RE", "WORK_AT_RE", "ALLERGY_RE",
    "FAV_RE", "FAV_REV_RE", "LIVE_RE", "FROM_RE", "PLAYS_RE", "STATUS_RE", "HABIT_RE", "BEEN_FOR_RE", "EVERY_RE",
    "IRREGULAR", "AMBIGUOUS_PAST", "STATIVE", "COORD_BEFORE_RE", "EVENT_RE", "BARE_PAST_RE", "ED_ADJ",
    "EVENT_SUBJECTS", "THING_BEFORE_RE", "NAME_VERB_RE", "AND_I_RE", "VOCATIVE_BEFORE", "VOCATIVE_AFTER",
    "COMMON_VERBS", "PREV_WORD_RE", "SUBORDINATORS", "POSS_SUBJ_PREV", "INTRANSITIVE", "EVENT_TRAIL", "MOTION_PROG",
    "DESIRE", "DETERMINERS", "NP_SKIP", "NP_STOP", "VAGUE", "NP_TOKEN", "DET_NP_RE", "OBJ_KIND", "OBJ_MULTI",
    "OBJ_MULTI_PREFIX", "PARTICLES", "HOLIDAY_WORDS", "HOLIDAY_PHRASES", "MOTION_KIND", "ACT_FIRST", "MULTI_FIRST",
    "CONCEPT_CUES", "WORK_CATS", "ED_NOUNS", "ADJ_SUFFIXES", "DET_BEFORE_RE", "NEXT_WORD", "TOKEN_PUNCT",
    "SENT_END_RE", "ABBREV_RE", "CLAUSE_SPLIT_RE", "CAPS_RE", "CAP_GAP_RE", "CAP_GAP_LONG_RE", "QUOTED_RE",
    "CHAT_TOKEN_RE", "TRAIL_STRIP", "TRAIL_WORDS", "NORMALIZE", "PRONOUN_THING", "PRONOUN_PERSON", "ADD_E_RE",
    "STEM_FIX", "DOUBLE", "PERSON_NOUNS", "REST_CUT_RE", "GERUND_OBJ_RE", "GERUND_DOBJ_RE", "GENERIC_PEOPLE",
    "CONCEPT_FACTS", "NOT_NAMES", "VEHICLE_MAKES", "VEHICLE_MODELS", "VEHICLE_MODELS_AMBIGUOUS", "VEHICLE_NOUNS",
    "VEHICLE_WORDS", "DRIVE_RE", "ACQUIRE_RE", "MY_VEHICLE_RE", "STUDY_DEGREES", "STUDY_HEADS", "STUDY_PLACES",
    "STUDY_RE", "MY_STUDY_RE", "DIET_RE", "DATING_RE", "DATING_PAIR_RE", "BROKE_UP_RE", "TO_A_THING_RE",
    "STATE_LEAD", "STATE_OTHERS", "STATE_STOP", "STATE_TRAIL", "RELATIONSHIP_STATUS", "DIET_STATUS", "UPPER",
    "LOWER", "LETTER"
]

_I = re.IGNORECASE


def _words(s: str) -> frozenset[str]:
    """The whitespace-separated words of ``s`` as a frozenset."""
    return frozenset(s.split())


def _alt(words: Iterable[str]) -> str:
    """A regex alternation of ``words`` (longest first, spaces match any whitespace)."""
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(set(words), key=lambda w: (-len(w), w)))


def _letters(keep: Callable[[str], bool]) -> str:
    """The non-ASCII Latin, Greek and Cyrillic characters (U+00C0-U+052F, U+1E00-U+1FFF) that ``keep``
    accepts, as the ``\\uXXXX-\\uXXXX`` ranges of a regex character class."""
    codes = [i for lo, hi in ((0xC0, 0x530), (0x1E00, 0x2000)) for i in range(lo, hi) if keep(chr(i))]
    ranges: list[list[int]] = []
    for i in codes:
        if ranges and ranges[-1][1] == i - 1:
            ranges[-1][1] = i
        else:
            ranges.append([i, i])
    return "".join(f"\\u{a:04x}" if a == b else f"\\u{a:04x}-\\u{b:04x}" for a, b in ranges)


# Letter classes of the name patterns: ASCII first, then accented Latin, Greek and Cyrillic letters
# and (for decomposed text) the combining diacritics, so "Montréal" and "Zoë" are matched whole. On
# ASCII text they match exactly what ``[A-Z]``, ``[a-z]`` and ``[A-Za-z]`` match.
_MARKS = "\\u0300-\\u036f"
UPPER = "A-Z" + _letters(lambda c: unicodedata.category(c) in ("Lu", "Lt"))
LOWER = "a-z" + _letters(lambda c: unicodedata.category(c) == "Ll") + _MARKS
LETTER = "A-Za-z" + _letters(lambda c: unicodedata.category(c).startswith("L")) + _MARKS
#: A capitalised name word ("Caroline", "Zoë"); used inside ``(?-i:...)`` in patterns compiled with ``_I``.
_NAME_WORD = f"[{UPPER}][{LOWER}]+"


# =========================================================================== word lists and patterns

CHITCHAT_WORDS = _words(
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
COMMON = _words(
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
CAP_BREAK = _words(
    """i i'm i've i'll i'd im ive monday tuesday wednesday thursday friday saturday sunday january
    february march april june july august september october november december hi hello hey hiya
    yo wow oh ah omg lol haha thanks thank ok okay yes yeah yay yep btw god bye congrats
    congratulations sorry please dear mr mrs ms dr mr. mrs. ms. dr. fyi tbh imo idk ps""")

# Relatives and roles that name one person when owned ("my mom" -> "Melanie's mom").
KIN_NORMAL = {
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
NAMED_ONLY = _words(
    "friend friends buddy buddies pal bestie bff colleague colleagues coworker coworkers co-worker "
    "neighbor neighbour teammate teammates classmate classmates student students teacher doctor "
    "dog cat puppy kitten pet"
)
_KIN_MOD = r"(?:(?:little|big|older|younger|baby|best|oldest|youngest|eldest|late|dear|twin|new|old|other|two|three|sweet|lovely)\s+){0,2}"
KIN_RE = re.compile(
    rf"\b(?P<own>my|our|your)\s+{_KIN_MOD}(?P<rel>{_alt(list(KIN_NORMAL) + list(NAMED_ONLY))})\b"
    rf"(?:,?\s+(?P<name>(?-i:{_NAME_WORD}))(?!\s*(?-i:[{UPPER}])))?",
    _I,
)
OWNERS = _words("my our your")
RELATIONS = frozenset(KIN_NORMAL) | NAMED_ONLY
POSS_KIN_RE = re.compile(rf"\b(?P<name>(?-i:{_NAME_WORD}))'s\s+{_KIN_MOD}(?P<rel>{_alt(KIN_NORMAL)})\b", _I)
# Capitalised kin used as a name ("Mom thinks ...").
CAP_KIN = {"Mom": "mom", "Mum": "mom", "Mommy": "mom", "Mama": "mom", "Dad": "dad", "Daddy": "dad",
            "Papa": "dad", "Grandma": "grandma", "Grandpa": "grandpa", "Nana": "grandma", "Granny": "grandma"}  # fmt: skip

PETS = _words(
    "dog dogs puppy puppies pup pups cat cats kitten kittens kitty turtle turtles tortoise snake "
    "snakes bird birds parrot parrots hamster hamsters rabbit rabbits bunny bunnies fish goldfish "
    "horse horses pony guinea-pig lizard lizards gecko ferret ferrets chicken chickens pig pigs goat goats pet pets "
    "fur-baby furbaby fur-babies critter critters pooch pooches doggo pupper"
)
_PET_ALT = _alt(PETS)
PET_NAMED_RE = re.compile(
    rf"\b(?:(?P<own>my|our)\s+(?:\w+\s+)?(?P<pet>{_PET_ALT})|(?:a|an|two|three|\d+)\s+(?:\w+\s+)?(?P<pet2>{_PET_ALT}))"
    rf",?\s+(?:(?:named|called)\s+)?(?P<name>(?-i:{_NAME_WORD}))(?:\s+and\s+(?P<name2>(?-i:{_NAME_WORD})))?",
    _I,
)
#: Words that put a conversation on pets (names given nearby are pet names).
PET_CUES = PETS | _words("collar collars leash leashes vet vets paw paws fur furry bark barking meow litter kennel")
NAME_COMMA_PET_RE = re.compile(rf"(?P<name>\b(?-i:{_NAME_WORD})),\s+(?:my|our)\s+(?:\w+\s+)?(?:{_PET_ALT})\b", _I)
NAME_IS_RE = re.compile(
    r"\b(?:(?:his|her|their|its|the|pet's|dog's|cat's)\s+names?\s*(?:'s|is|are|was|were)|named\s+(?:him|her|it|them)"
    rf"|(?:this|that)\s+is|meet)\s+(?P<names>(?-i:{_NAME_WORD})(?:(?:,\s*|,?\s+and\s+)(?-i:{_NAME_WORD}))*)",
    _I,
)
CAP_NAME_RE = re.compile(_NAME_WORD)
HAVE_PET_RE = re.compile(
    rf"\b(?:i|we)\s+(?:also\s+|now\s+|just\s+|still\s+)?(?:have|got|own|adopted|'ve\s+got|have\s+got|'ve\s+adopted)\s+"
    rf"(?P<num>a|an|one|two|three|four|five|some|\d+)\s+(?:(?:new|little|cute|rescue|baby|pet|adorable)\s+)?(?P<pet>{_PET_ALT})\b"
    rf"(?:,?\s+(?:named|called)\s+(?P<name>(?-i:{_NAME_WORD})))?",
    _I,
)

NATIONALITIES = _words(
    """american canadian mexican british english french german italian spanish portuguese
    irish scottish welsh dutch swedish norwegian danish finnish russian polish greek turkish
    chinese japanese korean thai vietnamese indian pakistani filipino indonesian australian
    brazilian argentinian colombian peruvian cuban african nigerian kenyan egyptian moroccan
    ethiopian asian european latin latino latina hispanic arab arabic persian israeli jewish
    hawaiian caribbean jamaican christian catholic muslim buddhist hindu native mediterranean
    nordic korean-american"""
)
# Countries, US states and large cities: single capitalised words that are places without a cue.
PLACES = _words(
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
PLACE_ACRONYMS = _words("usa us uk nyc la sf dc eu uae nz")
BRANDS = _words(
    """instagram facebook twitter tiktok youtube snapchat reddit linkedin pinterest netflix hulu
    spotify amazon google apple iphone ipad android samsung microsoft xbox playstation nintendo
    switch steam zoom uber lyft airbnb starbucks mcdonald's walmart target costco ikea etsy ebay
    lego disney marvel pixar nike adidas tesla toyota honda ford bmw audi jeep fortnite minecraft
    zelda pokemon pokémon mario overwatch valorant wii kindle fitbit peloton whatsapp discord
    twitch chatgpt photoshop"""
)
HOLIDAY_RE = re.compile(
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
ACTIVITY_SET = frozenset(w.replace("_", " ") for w in _ACTIVITIES.split())

# Words that head a place or an organisation in a capitalised name.
PLACE_HEADS = _words(
    """park lake beach mountain mountains mount mt city town village street st avenue ave road rd
    river island islands canyon valley falls bay county state states forest trail trails coast
    cafe café restaurant bar pub bistro diner bakery hotel inn resort mall market square plaza
    hospital airport station zoo garden gardens museum gallery theater theatre stadium arena
    center centre library church temple cathedral castle palace tower bridge harbor harbour
    reef desert springs hills hill peak national heights gym studio hall farm ranch lodge
    country kingdom republic province district"""
)
ORG_HEADS = _words(
    """university college school academy institute club company inc corp corporation ltd llc
    foundation association society team group organization organisation org council department
    agency bank network band league federation union committee charity shelter ministry
    studios records press magazine news times church"""
)
# Words right before a capitalised name that make it a place ("in Paris", "went to Banff", "from Ohio").
LOC_PREV = _words(
    "in at on near around across outside toward towards visit visited visiting visits explore explored exploring into"
)
MOTION_TO = _words(
    """went go goes going gone been moved move moving flew fly flying drove drive driving trip trips traveled
    travelled traveling travelling travel headed heading head vacation holiday back came come coming way
    relocated returned return returning honeymoon ticket tickets flight flights drive road hike"""
)
BE_FROM = _words("'m am is are was were come came comes moved originally back way i'm he's she's we're they're")
# Words right before a capitalised name that make it a work ("watched Inception", "the book Dune").
WORK_PREV = _words(
    """read reading reads watch watched watching watches saw seen see called titled named book books novel movie
    movies film films show shows series song songs album albums game games play poem documentary podcast episode"""
)


# Evaluative adjectives with their lexical polarity (used when VADER is neutral).
EVAL = {
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
_EVAL_ALT = _alt(EVAL)
_INTENS = (
    r"(?:so|really|very|super|pretty|totally|absolutely|truly|quite|just|such|incredibly|extremely|too|kinda"
    r"|kind\s+of|sort\s+of|a\s+bit|a\s+little|an?|the|most|not|never|always|still|also|honestly|seriously"
    r"|literally|definitely|rather|fairly|insanely|crazy|mega|all|beyond|way|ridiculously|particularly|actually)"
)
_COPULA = r"(?:is|was|are|were|'s|'re|looks?|looked|sounds?|sounded|seems?|seemed|feels?|felt|tastes?|tasted|smells?|smelled|has\s+been|have\s+been|had\s+been|must\s+be|must\s+have\s+been|will\s+be|'ll\s+be|would\s+be|'d\s+be|be)"
EVAL_PRED_RE = re.compile(rf"\b{_COPULA}(?:\s+{_INTENS})*\s+(?P<adj>{_EVAL_ALT})\b")
WHAT_A_RE = re.compile(
    rf"^\W*(?:what|such)\s+(?:an?\s+)?(?:{_INTENS}\s+)*(?P<adj>{_EVAL_ALT})(?P<np>(?:\s+[a-z][a-z'-]*){{1,3}})",
)
EVAL_ANY_RE = re.compile(rf"\b(?:{_EVAL_ALT})\b")
EMOTION_OF_RE = re.compile(
    r"\b(?P<pred>proud\s+of|happy\s+for|impressed\s+(?:by|with)|disappointed\s+(?:in|with|by)|annoyed\s+(?:at|with|by)"
    r"|sick\s+of|tired\s+of|fed\s+up\s+with|obsessed\s+with|grateful\s+for|thankful\s+for|in\s+love\s+with"
    r"|crazy\s+about|passionate\s+about|excited\s+about|fond\s+of|a\s+(?:big\s+|huge\s+)?fan\s+of"
    r"|not\s+a\s+(?:big\s+|huge\s+)?fan\s+of|upset\s+(?:with|about)|mad\s+at|angry\s+(?:at|with)|scared\s+of|afraid\s+of)\s+",
)
EMOTION_POLARITY = {
    "proud": 1, "happy": 1, "impressed": 1, "disappointed": -1, "annoyed": -1, "sick": -1, "tired": -1,
    "fed": -1, "obsessed": 1, "grateful": 1, "thankful": 1, "in": 1, "crazy": 1, "passionate": 1,
    "excited": 1, "fond": 1, "a": 1, "not": -1, "upset": -1, "mad": -1, "angry": -1, "scared": -1, "afraid": -1,
}  # fmt: skip

# Preference verbs and their lexical polarity.
PREF_VERBS = {
    "love": 1, "loves": 1, "loved": 1, "loving": 1, "adore": 1, "adores": 1, "adored": 1, "like": 1,
    "likes": 1, "liked": 1, "enjoy": 1, "enjoys": 1, "enjoyed": 1, "prefer": 1, "prefers": 1, "dig": 1,
    "hate": -1, "hates": -1, "hated": -1, "dislike": -1, "dislikes": -1, "disliked": -1, "detest": -1,
    "despise": -1, "loathe": -1, "can't stand": -1, "cannot stand": -1, "can't bear": -1,
}  # fmt: skip
_PREF_ALT = _alt(PREF_VERBS)
_ADV = (
    r"(?:really|absolutely|just|totally|also|still|do|does|did|truly|honestly|seriously|kinda|kind\s+of|sort\s+of"
    r"|always|usually|actually|definitely|genuinely|simply|literally|now|already|even|especially|particularly|both|all)"
)
_NEG = r"(?P<neg>don't|do\s+not|doesn't|does\s+not|didn't|did\s+not|never|no\s+longer|not|won't)"
PREF_RE = re.compile(
    rf"\b(?P<subj>i|we)(?:\s+{_ADV})*(?:\s+{_NEG})?(?:\s+{_ADV})*(?:\s+(?P<used>used\s+to))?\s+(?P<verb>{_PREF_ALT})"
    r"\s+(?P<rest>\S)",
)
#: After "I used to love X": the words that say the preference has turned ("..., but not anymore").
USED_TO_TURNED_RE = re.compile(
    r"\b(?:not|don't|do\s+not|doesn't|does\s+not)\s+(?:\w+\s+){0,3}?(?:anymore|any\s+more)\b|\bno\s+longer\b"
)
FRAME_RE = re.compile(
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
REPORT_VERB_RE = re.compile(rf"\b(?P<verb>{_REPORT_VERBS})\b(?:\s+that\b)?\s*")
REPORTER_RE = re.compile(
    rf"(?:\b(?P<own>my|our|your)\s+{_KIN_MOD}(?P<rel>{_alt(KIN_NORMAL)})|(?P<name>\b(?-i:{_NAME_WORD})))"
    r"(?:\s+(?:really|also|always|still|just|totally|definitely))?\s+$",
    _I,
)

REPORT_WORDS = _words(
    "thinks thought believes believed says said feels felt reckons told loves loved hates hated likes liked enjoys "
    "enjoyed adores adored stand prefers insists claims swears"
)
FRAME_WORDS = _words(
    "think thought believe believed feel felt guess reckon suppose bet figure doubt opinion imo imho personally sure "
    "certain convinced positive"
)
PREF_WORDS = frozenset(w for v in PREF_VERBS for w in v.split() if w not in ("can't", "cannot"))
EVAL_WORDS = frozenset(EVAL)
EMOTION_WORDS = _words(
    "proud happy impressed disappointed annoyed sick tired fed obsessed grateful thankful love crazy passionate "
    "excited fond fan upset mad angry scared afraid"
)
EXPLETIVE_RE = re.compile(r"\s+(how|that|to|when|what|seeing|hearing|being)\b\s*")
EXPLETIVE_SUBJ_RE = re.compile(r"\b(?:it|that|this)(?:'s)?\s*$")
EXPL_FRAME_RE = re.compile(
    r"(?:it's|its|it\s+is|it\s+was|it'll\s+be|it\s+will\s+be|that's)\s+(?:(?:so|really|very|super|pretty|more|most|quite|just|"
    r"always|also|not)\s+)*[a-z-]+\s+(to|that|how|when)\b\s*"
)
NEGATION_RE = re.compile(r"\b(?:not|never)\b|n't\b")
SELF_RE = re.compile(r"\b(?:i|i'm|we|we're|am|are)\b")
#: A time expression for a span up to now ("the past two weeks", "the last 3 months"), not a calendar unit.
ROLLING_SPAN_RE = re.compile(r"the\s+(?:past|last)\b", re.IGNORECASE)

QUESTION_START = re.compile(
    r"^\W*(?:(?:do|does|did|are|is|was|were|have|has|had|can|could|would|will|should|shall|may|might|must|am"
    r"|what|how|why|when|where|who|which|whose|whom)\s+(?:n't\s+|not\s+)?(?:you|i|we|they|he|she|it|that|this|there"
    r"|your|ya|u|anyone|anybody|everyone|people)\b|(?:any|anything|anyone)\s+\w+.*\?$)",
)

# Jobs (for "I'm a/an <job>").
JOBS = _words(
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
JOB_RE = re.compile(
    r"\b(?:i'm|i\s+am)\s+(?:now\s+|currently\s+|still\s+|actually\s+|just\s+|officially\s+|finally\s+|also\s+)*"
    r"(?:a|an)\s+(?P<job>(?:[a-z-]+\s+){0,3}?(?:" + _alt(JOBS) + r"))\b"
    r"|\bi\s+(?:currently\s+|now\s+|still\s+|also\s+)?work(?:ed)?\s+as\s+(?:a|an)\s+(?P<job2>[a-z -]{2,40}?)(?=[,.;!?]|\s+(?:at|for|in|and|but|so|since)\b|$)"
    r"|\bmy\s+job\s+(?:is|was)\s+(?:being\s+)?(?:a|an)\s+(?P<job3>[a-z -]{2,40}?)(?=[,.;!?]|\s+(?:at|for|in|and|but|so)\b|$)"
)
WORK_AT_RE = re.compile(
    r"\bi\s+(?:currently\s+|now\s+|still\s+|also\s+)?(?:work|worked|'m\s+working|am\s+working|volunteer|intern)\s+"
    r"(?P<prep>at|for)\s+(?P<rest>\S)"
)
ALLERGY_RE = re.compile(
    r"\b(?:i'm|i\s+am|i've\s+been|i\s+was)\s+(?:\w+\s+)?allergic\s+to\s+(?P<rest>\S)|\bmy\s+(?:\w+\s+)?allerg(?:y|ies)\s+(?:to\s+|is\s+|are\s+)(?P<rest2>\S)"
)
FAV_RE = re.compile(
    r"\bmy\s+(?:all[- ]time\s+|absolute\s+|very\s+|new\s+|current\s+|personal\s+)?favou?rite\s+(?P<cat>[a-z][a-z -]{0,30}?)\s+"
    r"(?:is|are|was|were|has\s+to\s+be|would\s+be|of\s+all\s+time\s+is)\s+(?:probably\s+|definitely\s+|still\s+|now\s+|prob\s+)?(?P<rest>\S)"
)
FAV_REV_RE = re.compile(
    r"(?P<np>\b[a-z][a-z' -]{1,40}?)\s+(?:is|are|was)\s+(?:definitely\s+|probably\s+|still\s+|totally\s+)?my\s+"
    r"(?:all[- ]time\s+|absolute\s+|new\s+)?favou?rite(?:\s+(?P<cat>[a-z]+))?\b"
)
LIVE_RE = re.compile(
    r"\b(?:i|we)\s+(?:currently\s+|now\s+|still\s+|also\s+)?(?:live|lived|'ve\s+lived|have\s+lived|'ve\s+been\s+living|"
    r"'m\s+living|am\s+living|'re\s+living|(?:just\s+|recently\s+|finally\s+)?moved|'ve\s+(?:just\s+)?moved|have\s+(?:just\s+)?moved|relocated)\s+"
    r"(?P<prep>in|to|near)\s+(?P<rest>\S)"
)
FROM_RE = re.compile(r"\b(?:i'm|i\s+am)\s+(?:originally\s+)?from\s+(?P<rest>\S)|\bi\s+(?:grew\s+up|was\s+born)\s+in\s+(?P<rest2>\S)")
PLAYS_RE = re.compile(
    r"\b(?:i|we)\s+(?:also\s+|still\s+|usually\s+|often\s+|regularly\s+|sometimes\s+)?play\s+(?P<rest>\S)"
)
STATUS_RE = re.compile(
    r"\b(?:i'm|i\s+am)\s+(?:now\s+|still\s+|happily\s+|officially\s+|also\s+)?"
    r"(?P<st>married|single|divorced|engaged|pregnant|vegan|vegetarian|pescatarian|retired|transgender|trans|"
    r"non-binary|nonbinary|gay|lesbian|bisexual|queer|left-handed|right-handed|sober|widowed|unemployed|self-employed|"
    r"a\s+(?:single\s+)?(?:mom|dad|mother|father|parent|grandma|grandpa|grandparent|vegan|vegetarian|introvert|extrovert|"
    r"morning\s+person|night\s+owl|homebody|dog\s+person|cat\s+person|twin|christian|muslim|buddhist|atheist))\b"
)
HABIT_RE = re.compile(
    r"\b(?:i|we)\s+(?P<adv>usually|always|often|normally|regularly|sometimes|generally|typically|frequently|occasionally|tend\s+to)"
    r"\s+(?P<rest>[a-z][^.!?;]*)"
)
BEEN_FOR_RE = re.compile(
    r"\b(?:i|we)(?:'ve|\s+have)\s+been\s+(?P<ing>[a-z]+ing)\b(?P<obj>[^.!?;]*?)\s*\b(?P<dur>(?:for|since)\s+(?:(?:about|over|almost|nearly|like|around)\s+)?"
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a\s+few|a\s+couple\s+of|many|several|years|ages|decades|[a-z]+)"
    r"(?:\s+(?:years?|months?|weeks?|decades?))?)"
)
EVERY_RE = re.compile(
    r"\b(?:i|we)\s+(?:also\s+|still\s+)?(?P<verb>[a-z]+)\b(?P<obj>[^.!?;,]{0,60}?)\s+(?P<freq>every\s+(?:day|morning|evening|night|week|weekend|month|year"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|each\s+(?:day|week|morning)|daily|weekly|twice\s+a\s+\w+|once\s+a\s+\w+)\b"
)

# Events: first-person (or "my X") clauses in the past, perfect, future or progressive.
IRREGULAR = {
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
AMBIGUOUS_PAST = _words("read put set hit cut hurt let quit upset spread bet cost shut beat had")
_PAST_IRREG = [w for w, lem in IRREGULAR.items() if w not in ("gone", "gotten", "taken", "seen", "begun", "drawn", "driven",
                                                                   "eaten", "fallen", "flown", "given", "grown", "known",
                                                                   "ridden", "sung", "spoken", "swum", "thrown", "written",
                                                                   "chosen", "forgotten", "broken", "torn", "been", "was",
                                                                   "were", "drunk", "become")]  # fmt: skip
# Lemmas that are states or opinions, not events.
STATIVE = _words(
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
COORD_BEFORE_RE = re.compile(r"\b([a-z]+)\s+and\s+$")
EVENT_RE = re.compile(
    _SUBJ_ALT
    + rf"(?:\s+{_EVT_ADV})*(?:"
    rf"\s+(?P<past>{_alt(_PAST_IRREG)}|[a-z]{{2,}}ed)\b(?!')"
    rf"|(?:'ve|\s+have|\s+has)(?:\s+{_EVT_ADV})*\s+(?P<pp>been\s+to\b|been\s+[a-z]+ing\b|{_alt(w for w in IRREGULAR if w not in ('been', 'was', 'were'))}|[a-z]{{2,}}ed)\b(?!')"
    r"|(?:'ll|\s+will|\s+shall|(?:'m|\s+am|'re|\s+are|\s+is|'s)\s+(?:going\s+to|gonna|planning\s+(?:on|to)|about\s+to|hoping\s+to"
    r"|set\s+to|scheduled\s+to|supposed\s+to)|\s+plan\s+to|\s+hope\s+to|\s+intend\s+to|\s+gonna|\s+want\s+to|'d\s+like\s+to"
    rf"|\s+would\s+like\s+to|\s+wanna)(?:\s+{_EVT_ADV})*\s+(?P<fut>[a-z]+)\b"
    rf"|(?:'m|\s+am|'re|\s+are)(?:\s+{_EVT_ADV})*\s+(?P<prog>[a-z]{{2,}}ing)\b"
    r")"
)
# A sentence that starts with a past verb and no subject ("Lost my job yesterday."): the speaker's event.
BARE_PAST_RE = re.compile(
    rf"(?P<subj>)(?:{_EVT_ADV}\s+)*(?P<past>{_alt(_PAST_IRREG)}|[a-z]{{2,}}ed)\b(?!')"
    r"(?P<poss>(?!))?(?P<pp>(?!))?(?P<fut>(?!))?(?P<prog>(?!))?"
)
ED_ADJ = _words(
    """excited interested tired stoked pumped obsessed blessed thrilled amazed scared worried stressed bored
    surprised pleased relieved inspired motivated determined committed dedicated devoted impressed delighted
    overwhelmed exhausted frustrated annoyed disappointed concerned confused convinced satisfied stuck
    touched moved honored honoured humbled grateful married engaged supposed used"""
)
EVENT_SUBJECTS = _words("i we my our i've i'll i'm we've we'll we're")
THING_BEFORE_RE = re.compile(r"\b(?:the|a|an|this|that|these|those|some|new|old)\s+$", _I)
# A name at a sentence start is recognised before these verbs ("Doug started two weeks ago").
NAME_VERB_RE = re.compile(
    r"\s+(?:said|says|told|asked|thinks|thought|started|came|went|got|called|texted|wants|wanted|invited|gave|sent"
    r"|visited|joined|left|moved|helped|took|bought|met|showed|brought|loves|hates|likes|adopted|married)\b"
)
AND_I_RE = re.compile(r"\s+and\s+(?:I|me)\b")
VOCATIVE_BEFORE = re.compile(r"(?:^|[,!.?]|\b(?:hey|hi|hello|thanks|thank you|yo|oh|wow|dear|yeah|yes|congrats|sorry))\s*$", _I)
VOCATIVE_AFTER = re.compile(r"\s*(?:[,.!?]|$)")
COMMON_VERBS = frozenset(IRREGULAR.values()) | STATIVE | _words(
    """connect relax help learn play explore celebrate visit check try find see watch practice start meet catch
    pick grab cheer hang chill unwind support raise spend enjoy work ask talk chat hike walk run swim shop cook
    bake paint eat get make take go do be have give keep bring show tell share spread reach focus stay"""
) - _words("work school church bed class")
PREV_WORD_RE = re.compile(r"([a-z']+)\s*(,?)\s*$")
SUBORDINATORS = _words("since if unless until whenever whether although though what how where who which")
POSS_SUBJ_PREV = _words(
    """and but so because when then while after before since yesterday today tonight recently lately finally
    also ago week weekend month year night morning afternoon evening day cause once as plus well oh what guess
    sadly luckily unfortunately fortunately anyway actually honestly basically yeah yes wow omg"""
)
INTRANSITIVE = _words(
    "graduate retire marry win move arrive leave quit travel relocate volunteer run swim hike camp propose engage "
    "return resign"
)
EVENT_TRAIL = _words(
    """and but so or then which that because while plus as if when with to for of the a an my your our his her
    their its this these those some in on at from by about into just really so very i we you it there here
    where who what how when like than as right"""
)
MOTION_PROG = _words("going heading moving flying traveling travelling leaving starting visiting attending hosting driving")
DESIRE = re.compile(r"want\s+to|'d\s+like\s+to|would\s+like\s+to|wanna|hope\s+to|hoping\s+to")

# Noun phrases.
DETERMINERS = _words(
    "the a an my our your his her their its this that these those some any another each every "
    "one two three four five six seven eight nine ten several few couple lots lot bunch"
)
NP_SKIP = _words(
    """new first second third last next little big huge whole own few couple bunch lot lots
    such so really very super pretty totally quite most more much many great good nice cool
    awesome amazing wonderful fantastic incredible beautiful lovely perfect best better fun
    special real true favorite favourite actual entire whole brand same different other
    several various certain couple of kind sort type bit"""
) | frozenset(EVAL)
NP_STOP = COMMON | _words(
    """to of in on at by for with from about into onto over under after before during through
    between among around up down out off again once and or but so because if when while that
    which who whom whose where how why what than then there here now too also as it its
    them him her me us you i we they he she is are was were be been being am do does did
    have has had will would can could should may might must shall not no never just still
    even only really very yet ago back away together already since until till though
    although whether either nor per via like unlike near toward towards across behind beside
    besides within without upon against this these those my your our their his any some every
    each all both lately recently today tomorrow yesterday tonight week month year weekend day anymore nowadays
    days weeks months years time times while whenever everything something anything nothing
    someone everyone anyone get got make made go went going take took come came see saw know
    think thought feel felt want wanted need say said tell told let keep kept start started gotta gonna wanna
    ya yeah ok okay"""
)
VAGUE = _words(
    """thing things stuff lot lots bit way ways time times day days week weeks month months
    year years one ones kind sort type part place idea ideas moment moments life people
    person guy guys everyone everything something anything nothing other others while
    fun experience experiences chance chances opportunity opportunities reminder feeling
    feelings sense world end start beginning rest side point reason reasons stuff news
    question questions answer answers matter deal job work pic pics photo photos picture
    pictures sure shot look lot update updates thanks effort efforts journey process
    situation case number amount level couple few much many more most less"""
)
NP_TOKEN = re.compile(r"[^\W_][\w'&-]*")
DET_NP_RE = re.compile(r"\b(?:a|an|the|my|our|some|this|these|his|her|their|new)\s+(?=[a-z0-9])")

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
OBJ_KIND = {w: kind for kind, ws in _OBJ_TRIGGERS.items() for w in ws.split()}
OBJ_MULTI = _words(
    """went_to go_to goes_to going_to been_to signed_up_for sign_up_for volunteer_at volunteer_for
    volunteer_with volunteered_at volunteered_for volunteered_with volunteering_at volunteering_for
    volunteering_with working_on work_on worked_on training_for trained_for preparing_for prepared_for
    applied_to applied_for apply_to apply_for trip_to went_on go_on going_on participated_in
    participate_in took_part_in competed_in performed_at perform_at took_up take_up taking_up
    interested_in passionate_about fan_of member_of part_of enrolled_in graduated_from studying_for
    getting_into got_into class_on course_on class_in course_in degree_in"""
)
OBJ_MULTI = frozenset(k.replace("_", " ") for k in OBJ_MULTI)
OBJ_MULTI_PREFIX = frozenset(" ".join(k.split()[:2]) for k in OBJ_MULTI if len(k.split()) == 3)
OBJ_KIND["into"] = "thing"
PARTICLES = _words("up in on out to into for at with")
HOLIDAY_WORDS = _words(
    "christmas thanksgiving halloween easter hanukkah diwali ramadan eid passover birthday pride valentine valentine's"
)
HOLIDAY_PHRASES = ("new year", "independence day", "mother's day", "father's day", "black friday", "of july", "patrick")
MOTION_KIND = _words("went go goes going been trip")
ACT_FIRST = frozenset(a.split()[0] for a in ACTIVITY_SET if " " in a)
MULTI_FIRST = frozenset(k.split()[0] for k in OBJ_MULTI)
CONCEPT_CUES = ACTIVITY_SET | ACT_FIRST | MULTI_FIRST | frozenset(OBJ_KIND)
WORK_CATS = _words(
    "book books movie movies film films show shows series song songs album albums game games novel novels poem "
    "play musical painting artwork podcast anime manga comic comics"
)
ED_NOUNS = _words("bed beds seed seeds need needs speed shed red reed weed feed")
ADJ_SUFFIXES = ("ed", "able", "ible", "ful", "ous", "ive", "ly", "ish", "less")
DET_BEFORE_RE = re.compile(r"\b(?:my|our|your|his|her|their|the|a|an|this|that|of)\s+(?:own\s+|new\s+|little\s+)?$")
NEXT_WORD = re.compile(r"[ \t]+([^\W_][\w'&-]*)")
TOKEN_PUNCT = frozenset("'&-_")

SENT_END_RE = re.compile(r"[.!?]+[\"')\]]*(?=\s|$)|\n+")
ABBREV_RE = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|vs|etc|Mt|Ave|No|e\.g|i\.e))\.$")
CLAUSE_SPLIT_RE = re.compile(
    r"(?:;|:(?!\d)|\s[-\u2013\u2014]+\s|\u2014|,\s*(?:and|but|so|because|though|although|while|plus|or|which|since|cause|'cause)\b"
    r"|\s(?:but|because|although|though|whereas|plus|cause)\b|,\s*(?=(?:i|we|it|that|this|he|she|they|you)\b(?!\s*[,.!?])))\s*",
    _I,
)
CAPS_RE = re.compile(
    rf"(?<![\w'@#])(?!I(?:'[a-z]+)?\b)(?:[{UPPER}][{LETTER}'&.-]*[{LETTER}]|[{UPPER}])(?:\s+\d{{1,4}}\b(?![:/]))?"
)
CAP_GAP_RE = re.compile(r"\s+(?:(?:of|the|de|da|del|la|le|du|von|van|y|&)\s+)*")
CAP_GAP_LONG_RE = re.compile(r"\s+(?:(?:of|the|de|da|del|la|le|du|von|van|y|&|at|in|on|to|for|a|an|and)\s+)*")
QUOTED_RE = re.compile(r"\"(?P<q>[^\"\n]{2,80})\"|(?<![A-Za-z])'(?P<s>[A-Za-z0-9][^'\n]{1,60}?)'(?![A-Za-z])")
CHAT_TOKEN_RE = re.compile(f"[{LETTER}][{LETTER}']*")
TRAIL_STRIP = ",;:-\u2013\u2014 \t\"'()[]"
TRAIL_WORDS = _words("and but so or then which that because while plus as if when with to for of the a an")
NORMALIZE = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'", "\u201c": '"', "\u201d": '"', "\u00a0": " "})

PRONOUN_THING = _words("it that this these those them they everything all")
PRONOUN_PERSON = _words("he she him her")


# =========================================================================== lemmatiser tables

ADD_E_RE = re.compile(r"^[^aeiou]*[aeiou][bcdfgkmnprstvz]$|(?:[^aeiou]c|v|iz|[^aeiou]at|[^aeiou]ut|ur[sc]|[^aeioun]g|[^aeiou]ur|[^aeiou]is)$")
STEM_FIX = {"creat": "create", "danc": "dance", "rais": "raise", "chang": "change", "us": "use",
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
DOUBLE = _words("run swim shop jog sit get set put cut hit stop plan chat dig skip drum rap scan spin begin win")


# =========================================================================== derived word sets

#: Nouns that denote people (never concepts).
PERSON_NOUNS = frozenset(KIN_NORMAL) | (NAMED_ONLY - PETS) | _words(
    "people person guy guys girl girls boy boys man men woman women folks family families everyone everybody")

REST_CUT_RE = re.compile(r",|\s+(?:and|but|so|which|because|while)\s+(?:it|i|we|he|she|they|you|that|this|it's|i'm)\b")
GERUND_OBJ_RE = re.compile(r"\s+(?:(?:about|with|on|in|to|for|at|into|through|around)\s+)?(?=[^\W_])")
GERUND_DOBJ_RE = re.compile(r"\s+(?=(?:my|our|his|her|their|the|a|an|this|these|those|some)\s)")
GENERIC_PEOPLE = _words(
    "people person guy guys folks everyone everybody someone somebody anyone anybody others one ones"
)

# States a later statement replaces (:mod:`~langmem_cog.graph.rules.states`): vehicle, school, diet, relationship.
VEHICLE_MAKES = _words(
    """toyota honda ford subaru skoda volkswagen vw fiat nissan kia hyundai tesla bmw audi mercedes volvo mazda
    chevy chevrolet jeep dodge gmc peugeot renault citroen vauxhall opel mini mitsubishi lexus porsche jaguar
    suzuki dacia cadillac buick chrysler saab polestar rivian yamaha ducati kawasaki vespa"""
)
VEHICLE_MODELS = _words(
    """corolla camry prius rav4 yaris aygo fiesta mondeo f-150 f150 outback forester impreza crosstrek octavia fabia
    passat tiguan punto micra qashqai silverado tacoma tundra wrangler clio megane corsa astra sportage tucson
    elantra sienna highlander pathfinder altima sentra miata cx-5"""
)
# Models that are also common words ("jazz", "golf", "panda"): a vehicle only after a verb of driving or buying.
VEHICLE_MODELS_AMBIGUOUS = _words(
    "civic accord jazz cr-v crv focus mustang ranger superb golf polo beetle panda leaf juke sierra cherokee cooper"
    " odyssey rogue escape explorer bronco transit caddy volt bolt mini"
)
VEHICLE_NOUNS = _words(
    "car truck pickup van minivan suv hatchback estate wagon campervan camper motorbike motorcycle scooter moped e-bike"
)
VEHICLE_WORDS = VEHICLE_MAKES | VEHICLE_MODELS | VEHICLE_MODELS_AMBIGUOUS | VEHICLE_NOUNS
# "I drive the Panda", "still driving the corolla", "I'm driving a little green Subaru Forester now".
DRIVE_RE = re.compile(
    r"(?:\b(?:i|we)(?:'m|'re|'ve\s+been|\s+am|\s+are|\s+have\s+been)?|(?:^|(?<=[.!?]\s)))"
    r"\s*(?:now\s+|still\s+|currently\s+|mostly\s+|usually\s+|just\s+)?(?:drive|driving|ride|riding)\b"
)
# "bought a 2015 Honda Jazz", "got a used 2016 subaru outback", "picked up a grey Skoda estate".
ACQUIRE_RE = re.compile(
    r"\b(?:bought|got|picked\s+up|leased|purchased|upgraded\s+to|traded\s+(?:it|her|him|\w+)\s+in\s+for)"
    r"\s+(?:myself\s+|ourselves\s+)?(?:a|an|the|this)\s"
)
# "my Subaru Outback", "my old red Fiesta" (a make or model, not a bare "car").
MY_VEHICLE_RE = re.compile(
    r"\b(?:my|our)\s+(?:(?:old|new|little|trusty|beloved|ancient|used|'\d\d|\d{4})\s+)?(?:[a-z]+\s+)?"
    r"(?P<v>" + _alt(VEHICLE_MAKES | VEHICLE_MODELS) + r")\b"
)
STUDY_DEGREES = _words(
    "master's masters phd doctorate degree diploma mba bachelor's bachelors apprenticeship msc bsc dissertation"
)
# A course or class is schooling only with its school named ("at Northgate College", "the Open University ... course").
STUDY_HEADS = STUDY_DEGREES | _words("course courses program programme class classes certificate certification bootcamp")
STUDY_PLACES = _words("college university uni school academy institute polytechnic")
# "I'm doing the part-time data science master's at York", "I signed up for the accounting night class at
# Northgate College", "I transferred my master's to McMaster", "I'm on the Open University accounting course".
STUDY_RE = re.compile(
    r"\bi(?:'m|\s+am|'ve\s+been|\s+have\s+been)?\s+(?:now\s+|still\s+|currently\s+|just\s+|finally\s+|officially\s+)?"
    r"(?:doing|studying|taking|on|enrolled\s+(?:in|on|at)|starting|started|began|enrolled|signed\s+up\s+for|"
    r"transferred|switched|got\s+(?:in|into|accepted\s+(?:in|into|to|on))|applied\s+(?:to|for))\s"
)
MY_STUDY_RE = re.compile(r"\bmy\s+(?:[a-z-]+\s+){0,3}?(?P<head>" + _alt(STUDY_HEADS) + r")\b")
# "I've been vegetarian six years", "still doing keto", "I'm on a low-carb diet", "I eat meat again".
DIET_STATUS = _words("vegan vegetarian pescatarian pescetarian keto paleo gluten-free dairy-free plant-based teetotal sober")
DIET_RE = re.compile(
    r"\b(?:i'm|i\s+am|i've\s+been|i\s+have\s+been|i've\s+gone|i\s+went|i'm\s+going)\s+(?:now\s+|still\s+|fully\s+|"
    r"strictly\s+|mostly\s+|officially\s+|back\s+to\s+being\s+)?(?:a\s+)?(?P<d>" + _alt(DIET_STATUS) + r")\b"
    r"|\b(?:(?:i'm|i\s+am)\s+)?(?:still\s+|now\s+)?(?:doing|on)\s+(?:a\s+|the\s+)?(?P<d2>keto|paleo|low-carb|low\s+carb|"
    r"whole30|low-salt|low-sodium|low-fat|sugar-free|vegan|vegetarian|plant-based)(?:\s+diet)?\b"
    r"|\bi(?:'m|\s+am)?\s+(?:back\s+to\s+)?eat(?:ing)?\s+(?P<d3>meat|fish|sugar|carbs|bread)\s+again\b"
)
RELATIONSHIP_STATUS = _words("married single divorced engaged widowed separated")
# "I've been seeing Tomasz", "Sam and I have been going out", "my girlfriend Aoife".
DATING_RE = re.compile(
    r"\b(?:i've\s+been|i\s+have\s+been|i'm|i\s+am|we've\s+been|we're)\s+(?:\w+\s+)?(?:seeing|dating|going\s+out\s+with)"
    r"\s+(?P<rest>\S)"
    r"|\bmy\s+(?:new\s+)?(?:girlfriend|boyfriend|partner|fianc[eé]e?|wife|husband)\s*,?\s+(?P<rest2>\S)"
)
# "Sam and I have been going out since Christmas" (the name is the one right before "and I").
DATING_PAIR_RE = re.compile(
    r"\band\s+i\s+(?:have\s+been|'ve\s+been|are|'re|started|got)\s+(?:going\s+out|dating|together|seeing\s+each\s+other|engaged|married)\b"
)
# Words dropped from the front of a vehicle or course: determiners and what says nothing of which one.
STATE_LEAD = frozenset({"a", "an", "the", "my", "our", "this", "that", "her", "his", "their", "myself", "ourselves", "used",
                   "new", "brand-new", "secondhand", "second-hand", "old", "little", "trusty", "over", "around", "in",
                   "it", "to", "work", "now", "still", "for", "up"})
STATE_OTHERS = frozenset({"he", "she", "they", "you", "he's", "she's", "they're", "you're"})
# What a vehicle phrase may run through before its vehicle word (it stops at a clause or a preposition).
STATE_STOP = frozenset({"from", "off", "at", "with", "which", "that", "and", "but", "so", "because", "on", "for", "since",
                   "last", "this", "yesterday", "today", "is", "was", "it's"})


# What may follow a vehicle inside its phrase ("a little green Subaru Forester now").
STATE_TRAIL = frozenset({"now", "again", "today", "yesterday", "too", "instead", "finally"})
# A status said of a thing, not a person ("I'm married to my job").
TO_A_THING_RE = re.compile(r"\s+to\s+(?:my|the|a|an|it|this|that|his|her|our|their)\b")
# "Tomasz and I broke up", "we split up", "I broke up with Sam".
BROKE_UP_RE = re.compile(r"\b(?:we|i|and\s+i)\s+(?:\w+\s+)?(?:broke\s+up|split\s+up|separated|called\s+it\s+off)\b")

#: Fact predicates whose object is also a concept, with its kind.
CONCEPT_FACTS = {"likes": "thing", "dislikes": "thing", "allergic_to": "thing", "favorite": "thing",
                  "lives_in": "place", "from": "place", "works_at": "organization", "plays": "activity"}  # fmt: skip


#: Words that are never read as a name at a sentence start.
NOT_NAMES = (
    ACTIVITY_SET | PLACES | NATIONALITIES | BRANDS | PLACE_HEADS | ORG_HEADS | JOBS | PETS | COMMON_VERBS
    | frozenset(EVAL) | VAGUE | HOLIDAY_WORDS | FRAME_WORDS | PERSON_NOUNS
)
