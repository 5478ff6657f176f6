"""The offline author's refusal, and the behaviours no reward here can express (why, in a
clause): shared by the reader and the templates, so neither imports the other for them."""

from __future__ import annotations


class NotExpressible(ValueError):
    """The templates cannot express the intent; the message says why, in a clause."""


UNSUPPORTED = {
    "cartwheel": "cartwheels need a multi-phase reward over the whole body",
    "handstand": "a handstand needs an inverted pose reward no template has",
    "headstand": "a headstand needs an inverted pose reward no template has",
    "dance": "dancing is a style, not a measurable target",
    "moonwalk": "moonwalking is a style, not a measurable target",
    "kick": "kicking needs a target object that the environment does not have",
    "throw": "throwing needs an object that the environment does not have",
    "climb": "climbing needs terrain that the environment does not have",
    "push": "pushing needs an object that the environment does not have",
    "carry": "carrying needs an object that the environment does not have",
    "juggle": "juggling needs objects that the environment does not have",
    "fetch": "fetching needs an object that the environment does not have",
    "wave": "waving needs a periodic arm motion the behaviour library does not measure",
    "clap": "clapping needs hand contact the behaviour library does not measure",
    "jack": "jumping jacks need a periodic arm and leg motion the behaviour library does not "
    "measure",
    "diagonally": "walking diagonally needs a direction between forward and sideways, which no "
    "reward here sets",
    "kneel": "kneeling needs knee contact with the floor, which the behaviour library does not "
    "measure",
    # Phases end on height, turn, time or speed, not on where the body is: no turning points.
    "roll forward": "a forward roll turns the body over along the floor, which needs a "
    "ground-contact reward no template has (a front flip turns it in the air)",
    "forward roll": "a forward roll turns the body over along the floor, which needs a "
    "ground-contact reward no template has (a front flip turns it in the air)",
    "roll backward": "a backward roll turns the body over along the floor, which needs a "
    "ground-contact reward no template has (a backflip turns it in the air)",
    "backward roll": "a backward roll turns the body over along the floor, which needs a "
    "ground-contact reward no template has (a backflip turns it in the air)",
    "forth": "going back and forth needs turning points at places, which no phase here ends on; "
    "say it as a sequence ('run forward, then run backward')",
}
