"""The reader's body words: body parts, the states a pose puts them in, and whole pose
phrases ("arms out to the sides", "one knee raised", "rear legs off the ground")."""

from __future__ import annotations

from activities.llm.offline.words.lexicon import table, words

# Body-part words -> the group a pose reads ("arms", "head", "knee", "knees", "legs", "stance",
# "torso"); feet and legs count as one group, which side (rear, front, one) comes from the
# words around them.
BODY_PARTS: dict[str, str] = {
    **dict.fromkeys(words("arm arms hand hands fist fists wrist wrists elbow elbows"), "arms"),
    **dict.fromkeys(words("head face chin nose"), "head"),
    "knee": "knee",
    "knees": "knees",
    **dict.fromkeys(words("leg legs foot feet paw paws hoof hooves"), "legs"),
    **dict.fromkeys(words("stance footing"), "stance"),
    **dict.fromkeys(words("torso chest trunk spine body belly"), "torso"),
}
# The states a pose phrase can put a part in.
POSE_STATES: dict[str, str] = {
    **dict.fromkeys(
        words(
            "out outstretched spread sideways sides side extended stretched wide apart open "
            "outward outwards"
        ),
        "out",
    ),
    **dict.fromkeys(
        words(
            "up raised raise raising lift lifted lifting above overhead aloft upward upwards sky "
            "high higher"
        ),
        "up",
    ),
    **dict.fromkeys(
        words(
            "down lowered lower lowering low bowed bow bowing dropped drop dropping hanging tucked "
            "downward downwards"
        ),
        "down",
    ),
    **dict.fromkeys(words("together narrow close closed"), "together"),
    **dict.fromkeys(words("broad broader wider"), "out"),
    **dict.fromkeys(words("off air"), "off"),
    **dict.fromkeys(words("straight upright vertical erect"), "straight"),
    # The body's line: a level torso ("back flat", "body horizontal"); arms held level are out.
    **dict.fromkeys(words("level flat even"), "level"),
    **dict.fromkeys(words("horizontal horizontally"), "horizontal"),
    **dict.fromkeys(words("tall"), "tall"),
}
# Which legs: "rear legs", "one leg".
LEG_SIDES: dict[str, str] = {
    **dict.fromkeys(words("rear back hind"), "rear"),
    **dict.fromkeys(words("front fore"), "front"),
    **dict.fromkeys(words("one single a"), "one"),
    **dict.fromkeys(words("left"), "left"),
    **dict.fromkeys(words("right"), "right"),
    **dict.fromkeys(words("3 three"), "three"),
}
# Verbs that only set a pose ("raise its arms", "lean forward").
POSE_VERBS = words("raise lift lower spread extend stretch bend lean tilt bow drop tuck open")
LEAN_VERBS = words("lean tilt bend bow incline pitch")
# Words after a pose phrase that repeat what it says ("lift its front legs off the ground").
POSE_TAILS = table(
    "tail",
    "off the ground | off the floor | in the air | into the air | up | high | up high | high up "
    "| wide | apart | out | to the ground | to the floor",
)
# Which poses name which body-part group: a part word whose pose a phrase already gave is
# read as part of it ("arms raised above its head").
POSE_GROUPS: dict[str, str] = {
    "arms_out": "arms", "arms_up": "arms", "arms_down": "arms", "head_down": "head",
    "head_up": "head", "knee_up": "knee", "wide_stance": "legs", "narrow_stance": "legs",
    "rear_feet_up": "legs", "front_feet_up": "legs", "one_foot": "legs", "upright": "torso",
    "stand_left": "legs", "stand_right": "legs", "torso_low": "torso", "torso_tall": "torso",
    "level": "torso", "horizontal": "torso", "front_left_foot_up": "legs",
    "front_right_foot_up": "legs", "back_left_foot_up": "legs", "back_right_foot_up": "legs",
    "high_knees": "knee",
    "lean_forward": "torso", "lean_back": "torso", "lean_left": "torso", "lean_right": "torso",
}  # fmt: skip
# Whole pose phrases, read before the part-and-state rule.
POSE_PHRASES: dict[str, str] = {
    **table(
        "arms_out",
        "t pose | arms out to the sides | arms out to its sides | arms out wide "
        "| arms outstretched | spread its arms | spread its arms wide | open its arms | "
        "stretch its arms out | arms spread wide | arms extended sideways | airplane arms",
    ),
    **table(
        "arms_down",
        "arms at its sides | arms by its sides | hands at its sides | arms "
        "down by its sides | arms relaxed at its sides",
    ),
    **table(
        "arms_up",
        "hands in the air | arms in the air | hands up | hands above its head | "
        "arms above its head | arms overhead | hands over its head | arms over its head | "
        "reach for the sky | above its head | over its head | raised above its head | "
        "raised over its head | stretched above its head",
    ),
    **table(
        "one_foot",
        "on one leg | on one foot | on a single leg | on a single foot | one leg "
        "in the air | one foot in the air | one foot off the ground | one leg off the "
        "ground | one leg raised | one foot raised | lift one leg | lift one foot | raise "
        "one leg | raise one foot | on the other 3 | on the other 3 legs | on its other 3 legs "
        "| on 3 legs | on its 3 legs | on just 3 legs | on only 3 legs",
    ),
    **table(
        "stand_left",
        "on its left leg | on its left foot | on the left leg | on the left foot | on left leg | "
        "on left foot | right leg raised | right foot raised | lift its right leg | lift its right "
        "foot | raise its right leg | raise its right foot",
    ),
    **table(
        "stand_right",
        "on its right leg | on its right foot | on the right leg | on the right foot | on right "
        "leg | on right foot | left leg raised | left foot raised | lift its left leg | lift its "
        "left foot | raise its left leg | raise its left foot",
    ),
    **table(
        "knee_up",
        "one knee raised | one knee up | raise one knee | lift one knee | raise "
        "a knee | lift a knee | a knee raised | knee raised | raise its knee | lift its "
        "knee | knee up",
    ),
    **table(
        "wide_stance",
        "a wide stance | wide stance | feet apart | legs apart | feet wide "
        "apart | legs wide apart | feet spread | legs spread | wide legged | feet wide | "
        "straddle",
    ),
    **table(
        "torso_low",
        "low to the ground | close to the ground | near the ground | close to the floor | low "
        "to the floor | near the floor | hug the ground | hugging the ground | body low | stay "
        "low to the ground | keep low to the ground | belly low | belly close to the ground",
    ),
    **table("torso_tall", "tall | tall and proud"),
    **table(
        "level",
        "keep its back flat | back flat | flat back | body level | torso level | keep the body "
        "level | keep its body level | keep the torso level | keep its torso level",
    ),
    **table("horizontal", "body horizontal | torso horizontal | horizontal body"),
    **table("narrow_stance", "feet together | legs together | a narrow stance | narrow stance"),
    **table(
        "head_down",
        "head lowered | head down | head bowed | bow its head | lower its head "
        "| lowered head | with its head down | head low | drop its head | nose down",
    ),
    **table(
        "head_up",
        "head up | head held high | head high | chin up | head raised | raise its head | nose up",
    ),
    **table(
        "rear_feet_up",
        "rear legs off the ground | back legs off the ground | hind legs "
        "off the ground | rear feet off the ground | back feet off the ground | hind feet "
        "off the ground | rear legs in the air | back legs in the air | hind legs in the "
        "air | lift its rear legs | lift its back legs | lift its hind legs | raise its rear "
        "legs | raise its back legs | raise its hind legs | rear legs up | back legs up | "
        "hind legs up | back foot off the ground | rear foot off the ground | on its front feet | "
        "on its front legs | on the front feet | on the front legs | on its front paws",
    ),
    **table(
        "front_feet_up",
        "front legs off the ground | front feet off the ground | front legs "
        "in the air | lift its front legs | raise its front legs | front legs up | front "
        "foot off the ground | front paws up | lift its front feet | raise its front feet | on "
        "its back feet | on the back feet | on its rear feet | on the rear feet | on its hind "
        "feet | on the hind feet",
    ),
    **table(
        "lean_forward",
        "lean forward | leaning forward | leans forward | lean forwards | "
        "leaning forwards | tilt forward | tilted forward | bend forward | bent forward | "
        "bending forward | bow forward | hunched forward | hunched over | bent over | "
        "bend over | bending over | lean over | lean into the run | lean slightly into the run | "
        "leaning into the run | lean into it | lean slightly forward | leaning slightly forward | "
        "lean a little forward | lean forward slightly | lean into the stride",
    ),
    **table(
        "lean_back",
        "lean back | leaning back | leans back | lean backward | lean "
        "backwards | leaning backward | leaning backwards | tilt back | tilted back | bend "
        "back | bending back | bent back",
    ),
    **table(
        "lean_left",
        "lean left | lean to the left | leaning left | leaning to the left | "
        "tilt left | tilt to the left | tilted to the left",
    ),
    **table(
        "lean_right",
        "lean right | lean to the right | leaning right | leaning to the right "
        "| tilt right | tilt to the right | tilted to the right",
    ),
}

# Details the reward does not tell apart ("lie down on its back": it measures a low torso only).
