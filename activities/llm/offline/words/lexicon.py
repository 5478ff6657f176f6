"""The offline reader's vocabulary: words and phrases as data, never as code paths.

Every table maps what people write to what the reader understands: verbs (by lemma) to a core
behaviour, phrases to qualifiers, speeds, limits, repetitions and style, units to their
dimension, body-part words to the parts a pose names. A synonym or an inflection is a new entry
here (numbers and units in units.py, body parts and poses in body_lexicon.py); `reader.py`
only walks the tables. Phrases are written as they read after `tokens.py`
normalises a prompt (lower case, hyphens and apostrophes split: "counter-clockwise" is "counter
clockwise", "don't" is "don t").
"""

from __future__ import annotations

from typing import TypeVar

V = TypeVar("V")


def words(text: str) -> frozenset[str]:
    """The whitespace-separated words of a literal."""
    return frozenset(text.split())


def table(value: V, text: str) -> dict[str, V]:
    """Each phrase of a '|'-separated literal mapped to `value`."""
    return {" ".join(p.split()): value for p in text.split("|") if p.strip()}


# --- core behaviours ------------------------------------------------------------------------

# Verb lemmas (tokens.lemma finds them from any inflection) and the core each names.
CORE_VERBS: dict[str, str] = {
    **dict.fromkeys(
        words(
            """walk run hop swim move go travel crawl sprint jog gallop dash trot march stride
            scurry scuttle slither glide advance proceed locomote race rush stroll amble wander
            shuffle cruise paddle retreat backpedal scamper lope canter bound creep sneak prowl
            tiptoe waddle saunter trudge plod skitter toddle lumber promenade mosey meander hike
            stomp stalk tread traverse patrol zoom bolt scoot scramble slink"""
        ),
        "locomotion",
    ),
    **dict.fromkeys(words("stand rise"), "stand"),
    **dict.fromkeys(words("lie lay recline sprawl"), "lie"),
    **dict.fromkeys(words("sit"), "sit"),
    **dict.fromkeys(words("squat crouch hunker stoop"), "squat"),
    **dict.fromkeys(words("spin rotate twirl pirouette whirl revolve gyrate swivel"), "spin"),
    **dict.fromkeys(words("jump leap bounce spring vault pounce"), "jump"),
    **dict.fromkeys(words("balance stabilize stabilise"), "balance"),
    **dict.fromkeys(words("reach touch"), "reach"),
    **dict.fromkeys(words("backflip frontflip flip somersault"), "flip"),
    **dict.fromkeys(words("roll tumble"), "roll"),
    **dict.fromkeys(words("stop halt freeze land"), "stop"),
    "turn": "turn",
}
# Multi-word cores, found before single words (longest first).
CORE_PHRASES: dict[str, str] = {
    **table(
        "stand",
        "get up | get back up | stand up | stand back up | straighten up | rise up | get to its "
        "feet | get on its feet | get onto its feet | come to standing | pick itself up | rise "
        "to its feet | come to its feet | rise up to its feet | stand up on its feet | be on its "
        "feet | stand on its feet | stand on two feet | stand on both feet",
    ),
    **table(
        "lie",
        "lie down | lay down | lie flat | stay lying | keep lying | remain lying | play dead | "
        "rest on the ground | lie back down | lie back | lay back down | lie down again | go back "
        "down | get down on the ground | get down on the floor",
    ),
    **table("sit", "sit down | sit up | take a seat | sit upright"),
    **table("squat", "bend its knees | bend the knees | get low"),
    **table(
        "spin",
        "turn around | turn in place | turn on the spot | turn in circles | spin around | "
        "spin in place | go round and round | turn round",
    ),
    **table(
        "rear_up",
        "rear up | stand on its rear legs | stand on its hind legs | stand on its back legs | "
        "stand on the rear legs | stand on the hind legs | stand on the back legs | stand up "
        "on its hind legs | stand up on its rear legs | stand up on its back legs | balance on "
        "its hind legs | balance on its rear legs | balance on its back legs | rear onto its "
        "hind legs | on its hind legs | on its rear legs | on its back legs",
    ),
    **table(
        "roll",
        "roll over | barrel roll | log roll | roll sideways | roll onto its side | roll over "
        "sideways | sideways roll | side roll | rolls over | rolling over | roll all the way over",
    ),
    **table(
        "flip",
        "back flip | front flip | backward flip | forward flip | backward somersault | forward "
        "somersault | flip over backwards | flip backwards | flip backward | flip forwards | "
        "flip forward | backflips | frontflips | flips | front flips | back flips | backward flips "
        "| forward flips",
    ),
    **table("stop", "come to a stop | come to rest | come to a halt"),
    **table(
        "balance",
        "don t let the pole fall | do not let the pole fall | never let the pole fall | keep the "
        "pole from falling | prevent the pole from falling | stop the pole from falling | keep "
        "the pole up | keep the poles up | don t let the poles fall | keep the pendulum up",
    ),
    **table("locomotion", "back up | move away | cover ground | make progress | in reverse"),
    **table(
        "reach",
        "go to the target | move to the target | point at the target | get to the target | move "
        "the fingertip to the target | move its fingertip to the target | bring the fingertip to "
        "the target | put the fingertip on the target | move the arm to the target | move its "
        "arm to the target | move the tip to the target | go for the target | move the arm to the "
        "goal | move its arm to the goal | move the fingertip to the goal | move its fingertip to "
        "the goal | bring the fingertip to the goal | go to the goal | go for the goal",
    ),
}
# Which way a flip turns: +1 nose-up (backflip), -1 nose-down (front flip).
FLIP_WAY: dict[str, float] = {
    **table(
        1.0,
        "backflip | back flip | backward flip | backward somersault | flip over "
        "backwards | flip backwards | flip backward | backflips | back flips | backward flips",
    ),
    **table(
        -1.0,
        "frontflip | front flip | forward flip | forward somersault | flip forwards | "
        "flip forward | frontflips | front flips | forward flips",
    ),
}
# Locomotion verbs that imply a speed, and the verbs that need legs or water.
VERB_SPEED: dict[str, str] = {
    **dict.fromkeys(words("run sprint dash race rush gallop bound"), "max"),
    **dict.fromkeys(words("jog trot lope canter"), "steady"),
    **dict.fromkeys(words("stroll amble wander shuffle"), "slow"),
}
LEGGED_VERBS = words(
    "walk run hop sprint jog gallop crawl dash trot march stride stroll amble lope"
)
SWIM_VERBS = words("swim slither paddle")
# Verbs that name a backward motion by themselves.
BACKWARD_VERBS = words("retreat backpedal")

# --- directions, turns and speeds -------------------------------------------------------------

DIRECTIONS: dict[str, float] = {
    **dict.fromkeys(words("forward forwards ahead onward onwards"), 1.0),
    **dict.fromkeys(words("backward backwards back reverse"), -1.0),
}
SIDES: dict[str, float] = {"left": 1.0, "right": -1.0}  # counter-clockwise positive
# Walking to a side: +1 left, -1 right, 0 either ("sideways").
LATERAL: dict[str, float] = {
    **table(1.0, "to the left | to its left | leftward | leftwards"),
    **table(-1.0, "to the right | to its right | rightward | rightwards"),
    **table(0.0, "sideways | sidewards | laterally | side to side | to the side"),
}

SPEED_WORDS: dict[str, str] = {
    **dict.fromkeys(
        words(
            "fast faster fastest quickly quick rapidly rapid swiftly swift speedily speedy hastily "
            "max maximum maximal top"
        ),
        "max",
    ),
    **dict.fromkeys(
        words("slow slowly slower gently gentle leisurely unhurriedly unhurried"), "slow"
    ),
    **dict.fromkeys(
        words(
            "steady steadily constant constantly evenly even consistent consistently brisk briskly "
            "moderate moderately"
        ),
        "steady",
    ),
}
SPEED_PHRASES: dict[str, str] = {
    **table(
        "max",
        "as fast as possible | as fast as it can | as quickly as possible | as quickly as it can "
        "| as far as possible | as far as it can "
        "| at top speed | at full speed | at maximum speed | at max speed | flat out | at full "
        "tilt | at high speed | at a high speed | at a fast pace | at a quick pace | at speed | "
        "as fast as you can | full speed | top speed",
    ),
    **table(
        "slow",
        "at an easy pace | at a leisurely pace | at a gentle pace | at a relaxed pace | at a slow "
        "pace | at walking pace | at a walking pace | at a comfortable pace | at an easy speed | "
        "at a low speed | at low speed | at a slow speed | at a crawl | at a stroll | at an "
        "unhurried pace | taking its time | without hurrying | without rushing | in no hurry | "
        "not too fast | not too quickly | do not go too fast | do not go too quickly | do not "
        "rush | no rushing | do not hurry | not so fast",
    ),
    **table(
        "steady",
        "at a steady pace | at a constant pace | at a constant speed | at a steady speed | at an "
        "even pace | at a brisk pace | at a moderate pace | at a moderate speed | at a medium "
        "pace | at a medium speed | at a jogging pace | at a good pace | at a regular pace | at "
        "a consistent pace | at a consistent speed | at an even speed | at cruising speed",
    ),
}

# --- qualifiers -----------------------------------------------------------------------------

QUALIFIERS: dict[str, str] = {
    **table(
        "no_fall",
        "without falling over | without falling down | without falling | without a fall | without "
        "tipping over | without toppling | without toppling over | never falling | never fall | "
        "not falling | don t fall | do not fall | keeping its balance | keep its balance | "
        "keeping balance | while keeping balance | staying on its feet | stay on its feet | stays "
        "on its feet | without losing its balance | without losing balance | carefully | "
        "cautiously | safely | without crashing | without tripping | without letting it fall | "
        "without letting it fall over | without letting the pole fall | without letting the poles "
        "fall | without it falling | never let it fall | don t let it fall | do not let it fall | "
        "without dropping the pole | without dropping it | don t flip over | do not flip over | "
        "without flipping over | never flip over | without flipping | not flipping over | without "
        "rolling over | don t fall over | do not fall over | not to flip over | not to fall over "
        "| not to fall | not flip over | not fall over | not to tip over | do not tip over | not "
        "tip over | never falls | never falls over | never tips over | not topple | do not topple "
        "over | without tipping | without falling on its back | avoid falling | avoid falling "
        "over | avoid flipping over | no falling | no falls | without ever falling | without ever "
        "falling over | never falling over | not to topple over | not topple over | without it "
        "tipping over | without it falling over | without them falling | do not let them fall | "
        "do not let them fall over | do not let it tip over | do not let it drop | not let it "
        "drop | do not drop it | never drop it | without letting it drop | do not flip onto its "
        "back | not flip onto its back | without flipping onto its back | do not roll onto its "
        "back | do not end up on its back | do not trip | not trip | never trip | do not stumble | "
        "without stumbling",
    ),
    **table(
        "whole_episode",
        "for the whole episode | for the entire episode | the whole episode | the entire episode "
        "| whole episode | for the whole time | the whole time | all the time | throughout the "
        "episode | until the end | for as long as possible | as long as possible | as long as it "
        "can | for the entire run | the entire run | for the whole run | the whole run | for the "
        "full episode | the full episode | the entire time | for the entire time | until the "
        "episode ends | until the end of the episode | indefinitely | forever | throughout | all "
        "along | the whole way | all the way | without stopping | non stop | nonstop | "
        "continuously | without a break | without pausing | the entire way | for as long as it "
        "can | as long as it can manage | for as long as possible | for as long as you can | as "
        "long as you can | the rest of the episode | for the rest of the episode | the remainder "
        "of the episode",
    ),
    **table(
        "from_ground",
        "from the ground | from the floor | from lying down | from lying | from a lying position "
        "| from its back | up from the ground | up from the floor | off the floor | off the "
        "ground | up off the floor | up off the ground",
    ),
    **table(
        "in_place",
        "in place | on the spot | in one place | on one spot | without travelling | without "
        "traveling | where it stands | without going anywhere | without moving away | in the "
        "same place | on the same spot | in the same spot | staying in the same spot | staying "
        "in place | without leaving its spot | without drifting | without drifting forward or "
        "backward | without drifting forward or backwards | without drifting too far | without "
        "wandering off | do not wander off | without wandering | without moving off | stay "
        "where it is | stay where you are | remain where it is | remain where you are | stay "
        "right there | stay right where it is",
    ),
    **table(
        "still",
        "and stay still | stay still | stays still | keep still | hold still | remain still | "
        "without moving | motionless | still | stock still | hold it | hold the pose | hold that "
        "pose | hold position | hold its position | stay put | not moving | steady there | keep "
        "it steady | hold it steady | keep steady | stay steady | hold steady | keep pointing at "
        "it | keep pointing at the target | stay on the target | stay on it | do not move | do "
        "not move at all | not move at all | not to move | without any movement | no moving | "
        "hold the arm steady | hold the arm still | keep the arm still | keep the arm steady | "
        "hold its arm still | hold its arm steady | keep its arm still",
    ),
    **table(
        "stay",
        "and stay standing | stay standing | keep standing | remain standing | "
        "stay up | stay sitting | remain sitting | stay seated | remain seated "
        "| keep sitting | stay crouched | stay squatting | stay low | stay down | stay lying | "
        "remain lying | keep lying | stay there | remain there | and hold it there | stay that "
        "way | stay in that pose | hold it there | keep it there | and keep it there | leave it "
        "there | keep it on the target | stay on the target",
    ),
    **table("ccw", "counter clockwise | counterclockwise | anti clockwise | anticlockwise"),
    **table("cw", "clockwise"),
    **table(
        "circle",
        "in a circle | in circles | around in a circle | in a loop | in a ring | round in a "
        "circle | in a circular path | along a circle | in a big circle | in a large circle | in "
        "a wide circle | in a small circle | in a tight circle | in a big loop | in a wide loop",
    ),
    **table(
        "high_knees",
        "with high knees | high knees | lifting the knees high | lifting its knees high | knees "
        "high | lifting its knees | raising its knees high | raising its knees | knees up | "
        "bringing its knees up | high knee",
    ),
    **table(
        "upright",
        "land on its feet | and land on its feet | landing on its feet | land back on its feet | "
        "landing back on its feet | land on both feet | landing on both feet | land on its feet "
        "each time | landing on both feet each time | land on both feet each time | landing on "
        "its feet each time | land safely | landing safely | land it | land upright | landing "
        "upright | stay upright | stays upright | staying upright | remain upright | land each "
        "one | land each of them | land them all | land every one | stick the "
        "landing | sticking the landing | land cleanly | upright | vertical | vertically | with "
        "its torso upright | with a straight back | keeping its back straight | back straight | "
        "with its back straight | straight backed | erect | with an upright torso | with its "
        "chest up | chest up",
    ),
    **table(
        "no_backward",
        "without going backward | without going backwards | never backward | never backwards | "
        "not backward | not backwards | without moving backward | without moving backwards | "
        "without reversing | without backing up | never going backward | never going "
        "backwards | no backward | do not go backward at any point | do not go backward | do "
        "not go backwards | never go backward | never go backwards | do not move backward | do not "
        "move backwards | never moves backward | never reverse | do not reverse",
    ),
    **table(
        "centered",
        "the cart in the middle | cart in the middle | in the middle | the cart centered | cart "
        "centered | centered | centred | at the center | at the centre | near the center | near "
        "the centre | in the center | in the centre | near the middle | near the middle of the "
        "track | in the middle of the track | close to the center | close to the centre | close "
        "to the middle | do not let the cart drift away from the center | not to let the cart "
        "drift away from the center | not to let the cart drift | not to let the cart slide too "
        "far | not let the cart drift away from the center | without drifting away from the "
        "center | do not let the cart drift | do not let the cart slide too far to either side | "
        "do not let the cart slide too far | without the cart sliding too far | keep the cart "
        "centered | keep the cart centred | keep the cart in the middle | keep the cart near the "
        "middle | the cart near the middle",
    ),
    **table(
        "no_turn",
        "without turning | without turning around | without changing direction | keeping its "
        "heading | facing forward | without veering off | do not turn | never turn | do not turn "
        "around | no turning",
    ),
    **table(
        "straight",
        "in a straight line | straight ahead | without drifting | without veering | "
        "without drifting sideways | in a line | along a straight line | do not drift sideways | "
        "do not wiggle sideways | do not veer sideways | without veering sideways | without "
        "sliding sideways | do not slide sideways",
    ),
}

# Words read as "natural, smooth motion": a doubled control cost in the reward; the judge does
# not score them, so they are also listed as not measured.
NATURAL = words(
    "natural naturally smooth smoothly efficient efficiently fluid fluidly economical economically"
)
NATURAL_PHRASES = table(
    "natural",
    "with a natural gait | with a natural stride | with a smooth gait | with a smooth stride | "
    "in a natural way | in a natural manner | like a real animal",
)

# --- style: understood, not measured ---------------------------------------------------------

STYLE = words(
    """
    gracefully graceful elegantly elegant beautifully beautiful confidently confident proudly
    proud happily happy joyfully joyful cheerfully cheerful playfully playful lazily lazy
    casually casual nonchalantly majestically majestic energetically energetic vigorously
    vigorous aggressively aggressive powerfully powerful lightly light softly soft quietly quiet
    stylishly stylish nicely nice neatly neat purposefully purposeful determinedly calmly calm
    relaxed relaxedly loosely loose effortlessly effortless rhythmically rhythmic dynamically
    dynamic athletically athletic bouncily bouncy nimbly nimble daintily dainty clumsily clumsy
    sneakily stealthily heroically dramatically dramatic theatrically boldly bold fiercely
    fierce lively cool coolly awkwardly sloppily precisely cleanly tidily perfectly perfect
    properly well proper good nice realistically realistic convincingly
    """
)
# Nouns of manner: "with a relaxed stride", "with good posture".
MANNER_NOUNS = words(
    "stride strides gait step steps posture form style rhythm manner motion movement movements "
    "attitude flair swagger grace ease elegance poise technique look vibe energy spring bounce "
    "confidence purpose determination fashion way feel hops leaps bounds jumps"
)
# Words that open a comparison, read to the clause's end as style: "like a cat", "as if drunk".
COMPARISON = table(
    "style",
    "like | like a | like an | like the | like some | as if | as though | in the style of | the "
    "way a | the way an | similar to | imitating | mimicking | pretending to be",
)

# --- repetition and sequence ----------------------------------------------------------------

REPEAT_PHRASES = table(
    "repeat",
    "up and down | again and again | over and over again | over and over | repeatedly | multiple "
    "times | many times | one after another | one after the other | again | in a row | in "
    "succession | back to back | and repeat | repeat | keep repeating | on repeat",
)
# Sequence markers split a prompt into steps; "before" reverses the order of its two sides.
SEQUENCE: dict[str, str] = {
    **table(
        "then",
        "and then | then | after that | afterwards | afterward | and finally | finally | "
        "followed by | and after that | next | later | subsequently | after which | once done | "
        "when done | and next | and at the end | at the end | in the end | eventually | and "
        "eventually | and later | before finally | after this | and after this",
    ),
    **table("before", "before"),
}
FIRST = words("first firstly initially")

DETAILS = table(
    "detail",
    "on its back | on its side | on its belly | on its stomach | on its front | face down | face "
    "up | onto its back | onto its side | onto its belly | on the ground | on the floor | flat on "
    "the ground | flat on the floor | on all fours | on all 4 legs | on all four legs | on 4 legs "
    "| on four legs | on its 4 legs | on its four legs",
)
STYLE_PHRASES = table(
    "style",
    "land softly | land gently | landing softly | landing gently | a soft landing | soft landing "
    "| land softly each time | in style | with style | with flair | with ease | with grace | with "
    "confidence | with swagger | with attitude | with purpose | with gusto | with a bounce in its "
    "step | with a spring in its step | like a pro | like a champion | like a boss | in a relaxed "
    "way | in a funny way | for fun | just for fun | to show off",
)
# Words a core takes beside its own (what they change is read by the composer from the tokens).
CORE_EXTRAS: dict[str, frozenset[str]] = {
    "locomotion": words("line far distance along path steps step straight"),
    "stand": words("tall taller straight upright"),
    "lie": words("ground floor flat"),
    "sit": words("upright position"),
    "squat": words("deep low lower position pose down"),
    "spin": words("around circle circles round place"),
    "turn": words("around"),
    "jump": words("high higher highest height air vertically straight up"),
    "balance": words(
        "pole poles both two pendulum single up long centered center centre cart double link links "
        "straight"
    ),
    "reach": words(
        "target goal fingertip tip point there precisely accurately arm quickly quick fast"
    ),
    "rear_up": words("legs leg two rear hind back"),
    "flip": words("air"),
    "stop": frozenset(),
    "pose": frozenset(),
}
# "keep jumping", "continue spinning": a repetition of the behaviour that follows.
KEEP = words("keep keeps continue continues continuing keeps")

# --- what carries no meaning here -----------------------------------------------------------

FILLER = words(
    """
    a an the to and of in on at as with its it itself his her their while please should must
    onto into toward towards across lot
    learn make let try be is are can could will would so that possible way manner do does doing
    perform performing keep keeping stay staying remain remaining hold holding robot agent policy
    body cheetah halfcheetah half ant hopper walker walker2d humanoid swimmer reacher
    creature very really much more most just i you your we want wants need needs like
    would s t being get gets getting then time some bit little also own itself by for
    all whole entire episode possible able without from up trying try tries going whilst put
    puts putting bring brings bringing but however yet take takes taking
    """
)
# Filler the author mentions as not used when a prompt holds them (never articles and such).
QUIET = words(
    "a an the to and of in on at as with it its itself is are be then so that s t by for from up "
    "do does doing perform performing make let try tries trying can could should must will keep "
    "keeping stay staying remain remaining hold holding going get gets getting put puts putting "
    "bring brings bringing but however yet take takes taking "
    "while whilst i you we want wants need needs would like also own just some bit little very "
    "really much more most being all whole entire episode possible able"
)
