"""The description bank: behaviours described the way people write them for a prompt-to-policy
benchmark, on all ten envs, each with what a careful reader takes it to ask for, or the reason
it must be refused.

Where paraphrases.py holds short intents ("hop forward twice"), these are one to four sentences
with filler ("I'd like the robot to...", "please", "try to"), hedged numbers ("roughly 3 m/s",
"about five seconds"), several qualifiers at once (pace, posture, which limbs, for how long, what
to hold, what not to do) and style a reward cannot measure ("gracefully", "with a relaxed gait").
Sentences after the first qualify the same behaviour ("Keep the head up.") unless they say
"then", "after that" and the like, which start the next step.

The expectations are what the English asks for, not what the reader happens to output. A case is
(env, prompt, expected), with the keys of paraphrases.py, checked by `problems` in
test_paraphrases.py:

- steps: the cores in order, ">" between steps ("locomotion>stop")
- dir: the first step's direction (-1 backward / clockwise / right turn / front flip)
- speed, v, band: the first moving step's speed mode, exact speed (m/s), band (lo, hi)
- count, height, dur, deadline, angle (degrees), dist: the first step's numbers
- poses, q: poses and qualifiers every listed one of which some step holds
- style: phrases ("|" between them) listed as not measured
- template, crit, shaping: the reward template, criteria and SHAPING keys
- refuse: a phrase the one-line refusal contains
"""

from __future__ import annotations

from typing import Any

Case = tuple[str, str, dict[str, Any]]

HC, HOP, WALK, ANT = "HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Ant-v5"
HUM, STANDUP, SWIM, REACH = "Humanoid-v5", "HumanoidStandup-v5", "Swimmer-v5", "Reacher-v5"
PEND, DOUBLE = "InvertedPendulum-v5", "InvertedDoublePendulum-v5"

LOCO = "locomotion"

BANK: list[Case] = [
    # --- HalfCheetah ------------------------------------------------------------------------
    (HC, "I'd like the cheetah to run forward as fast as it can. Keep the torso level and don't "
         "flip over.",
     {"steps": LOCO, "speed": "max", "poses": "level", "q": "no_fall"}),
    (HC, "Please run forward at roughly 3 m/s with a smooth, fluid stride.",
     {"steps": LOCO, "v": 3.0, "style": "with a smooth, fluid stride"}),
    (HC, "Run backward slowly, keeping the body low to the ground the whole time.",
     {"steps": LOCO, "dir": -1, "speed": "slow", "poses": "torso_low", "q": "whole_episode"}),
    (HC, "Do a backflip, and try to land back on your feet afterwards.",
     {"steps": "flip", "dir": 1, "q": "upright", "crit": "flips"}),
    (HC, "Could you make the cheetah do two front flips in a row? It should land upright.",
     {"steps": "flip", "dir": -1, "count": 2, "q": "upright"}),
    (HC, "Walk forward at an easy pace with the head held up high.",
     {"steps": LOCO, "speed": "slow", "poses": "head_up"}),
    (HC, "Balance on the front feet with the back legs lifted off the ground, and hold it for "
         "about 3 seconds.",
     {"steps": "pose", "poses": "rear_feet_up", "dur": 3}),
    (HC, "Lean forward onto the front legs and run ahead at a steady pace.",
     {"steps": LOCO, "speed": "steady", "poses": "lean_forward"}),
    (HC, "Run forward for about five seconds, then come to a complete stop and stay still.",
     {"steps": f"{LOCO}>stop", "dur": 5, "q": "still"}),
    (HC, "Sprint forward, but never faster than 4 m/s. Don't go backward at any point.",
     {"steps": LOCO, "band": (None, 4.0), "q": "no_backward"}),
    (HC, "Run forward 15 meters while keeping the torso low and flat.",
     {"steps": LOCO, "dist": 15, "poses": "torso_low level"}),
    (HC, "Lift the front feet off the ground and hold that pose for the whole episode, without "
         "tipping over.",
     {"steps": "pose", "poses": "front_feet_up", "q": "whole_episode no_fall"}),
    (HC, "Gallop forward energetically, with the head tucked down low.",
     {"steps": LOCO, "poses": "head_down", "style": "energetically"}),
    (HC, "Stand up on your hind legs and hold it there for a few seconds, please.",
     {"refuse": "standing on rear legs needs a quadruped"}),
    (HC, "Turn 90 degrees to the left and then keep running.",
     {"refuse": "turning needs a body that turns"}),
    # --- Hopper ------------------------------------------------------------------------------
    (HOP, "Hop forward at a moderate pace. Try not to fall over.",
     {"steps": LOCO, "speed": "steady", "q": "no_fall"}),
    (HOP, "Jump up as high as you can three times, landing upright each time.",
     {"steps": "jump", "count": 3, "q": "upright"}),
    (HOP, "Stand still and keep your balance for the whole episode.",
     {"steps": "stand", "q": "still whole_episode no_fall"}),
    (HOP, "Squat down low and hold that position for roughly 2 seconds.",
     {"steps": "squat", "dur": 2}),
    (HOP, "Hop in place gently, without drifting forward or backward.",
     {"steps": LOCO, "q": "in_place", "style": "gently"}),
    (HOP, "Hop forward about 5 meters and then stop.", {"steps": f"{LOCO}>stop", "dist": 5}),
    (HOP, "I'd like the hopper to jump roughly half a meter high and land cleanly.",
     {"steps": "jump", "height": 0.5, "q": "upright"}),
    (HOP, "Hop forward quickly while keeping the torso upright.",
     {"steps": LOCO, "speed": "max", "q": "upright"}),
    (HOP, "Keep hopping forward steadily for the entire episode without ever falling.",
     {"steps": LOCO, "speed": "steady", "q": "whole_episode no_fall"}),
    (HOP, "Stand on the one leg without moving for about 3 seconds, then hop forward.",
     {"steps": f"stand>{LOCO}", "dur": 3, "q": "still"}),
    (HOP, "Hop in a big circle to the left, nice and slow.", {"refuse": "cannot turn"}),
    # --- Walker2d ----------------------------------------------------------------------------
    (WALK, "Stand on one leg and keep that pose for as long as you can. Try not to topple over.",
     {"steps": "stand", "poses": "one_foot", "q": "whole_episode no_fall"}),
    (WALK, "Walk forward at a leisurely pace, keeping the torso tall and upright.",
     {"steps": LOCO, "speed": "slow", "poses": "torso_tall", "q": "upright"}),
    (WALK, "Run forward quickly with high knees, like a sprinter doing drills.",
     {"steps": LOCO, "speed": "max", "q": "high_knees", "style": "like a sprinter doing drills"}),
    (WALK, "Please balance on your right leg only, for about five seconds.",
     {"steps": "stand", "poses": "stand_right", "dur": 5}),
    (WALK, "Crouch down into a low squat and hold it for the whole episode.",
     {"steps": "squat", "q": "whole_episode"}),
    (WALK, "Jump forward twice, landing on both feet each time.",
     {"steps": "jump", "count": 2, "dir": 1}),
    (WALK, "Walk backward carefully, taking small steps, and don't fall.",
     {"steps": LOCO, "dir": -1, "q": "no_fall", "style": "small steps"}),
    (WALK, "March in place with your knees raised high for about 5 seconds.",
     {"steps": LOCO, "q": "in_place high_knees", "dur": 5}),
    (WALK, "Walk forward at around 1.2 m/s and keep going in a straight line.",
     {"steps": LOCO, "v": 1.2, "q": "straight"}),
    (WALK, "Jog forward for about 4 seconds and then stand on your left leg.",
     {"steps": f"{LOCO}>stand", "speed": "steady", "dur": 4, "poses": "stand_left"}),
    (WALK, "Walk slowly while leaning forward by roughly 20 degrees.",
     {"steps": LOCO, "speed": "slow", "poses": "lean_forward", "angle": 20}),
    (WALK, "Walk ahead with both arms raised over your head.", {"refuse": "has no left hand"}),
    # --- Ant ---------------------------------------------------------------------------------
    (ANT, "Crawl forward slowly with the body held low, close to the ground, for the whole "
          "episode.",
     {"steps": LOCO, "speed": "slow", "poses": "torso_low", "q": "whole_episode"}),
    (ANT, "Spin clockwise in place at a steady rate, and don't drift away from where you started.",
     {"steps": "spin", "dir": -1, "speed": "steady", "q": "in_place"}),
    (ANT, "Walk in a big circle to the left at a relaxed pace.",
     {"steps": LOCO, "speed": "slow", "q": "circle ccw"}),
    (ANT, "Lift the front left leg off the ground and stand on the other three legs for about 5 "
          "seconds.",
     {"steps": "stand", "poses": "front_left_foot_up", "dur": 5}),
    (ANT, "Raise both front legs and walk forward on the back legs only.",
     {"steps": LOCO, "poses": "front_feet_up"}),
    (ANT, "Turn left about 90 degrees, then walk straight ahead.",
     {"steps": f"turn>{LOCO}", "dir": 1, "angle": 90}),
    (ANT, "Walk backward steadily without turning, keeping the torso level.",
     {"steps": LOCO, "dir": -1, "speed": "steady", "q": "no_turn", "poses": "level"}),
    (ANT, "Jump as high as you can, then land and stay still.",
     {"steps": "jump>stop", "q": "still"}),
    (ANT, "Shuffle sideways to the right at roughly 0.5 m/s.",
     {"steps": LOCO, "v": 0.5, "crit": "moves_sideways"}),
    (ANT, "Spin counter-clockwise three full times, then stop.",
     {"steps": "spin>stop", "dir": 1, "count": 3}),
    (ANT, "Stand still on three legs, with the back right leg lifted up, for the entire episode.",
     {"steps": "stand", "poses": "back_right_foot_up", "q": "still whole_episode"}),
    (ANT, "Rear up on your hind legs and hold it for around 2 seconds.",
     {"steps": "rear_up", "dur": 2}),
    (ANT, "Walk forward quickly for about 10 meters, then turn right 180 degrees.",
     {"steps": f"{LOCO}>turn", "speed": "max", "dist": 10}),
    (ANT, "Move forward gracefully with both rear feet lifted off the ground.",
     {"steps": LOCO, "poses": "rear_feet_up", "style": "gracefully"}),
    (ANT, "Kneel down on your front legs and stay there for a while.",
     {"refuse": "kneeling needs"}),
    # --- Humanoid ----------------------------------------------------------------------------
    (HUM, "Walk forward at a relaxed pace, with your arms stretched out to the sides and your "
          "head up.",
     {"steps": LOCO, "speed": "slow", "poses": "arms_out head_up"}),
    (HUM, "Stand still with a wide stance and both arms raised overhead, for the whole episode.",
     {"steps": "stand", "q": "still whole_episode", "poses": "wide_stance arms_up"}),
    (HUM, "Run forward as fast as possible without falling. Lean slightly into the run.",
     {"steps": LOCO, "speed": "max", "q": "no_fall", "poses": "lean_forward"}),
    (HUM, "Crouch down low and hold the squat for roughly 3 seconds, keeping your back straight.",
     {"steps": "squat", "dur": 3, "q": "upright"}),
    (HUM, "Spin slowly counter-clockwise in place with your arms held out to the sides.",
     {"steps": "spin", "dir": 1, "speed": "slow", "q": "in_place", "poses": "arms_out"}),
    (HUM, "Turn to the right by about 90 degrees and then walk forward confidently.",
     {"steps": f"turn>{LOCO}", "dir": -1, "angle": 90, "style": "confidently"}),
    (HUM, "Stand on your left foot with the right knee raised up high, and hold it for five "
          "seconds.",
     {"steps": "stand", "poses": "stand_left knee_up", "dur": 5}),
    (HUM, "Jump as high as you can with both arms up, and land on your feet.",
     {"steps": "jump", "poses": "arms_up", "q": "upright"}),
    (HUM, "Walk forward with your feet close together and your head bowed.",
     {"steps": LOCO, "poses": "narrow_stance head_down"}),
    (HUM, "Lean to the right about 15 degrees and hold that pose without falling.",
     {"steps": "pose", "poses": "lean_right", "angle": 15, "q": "no_fall"}),
    (HUM, "Jog in place for around 10 seconds, then sit down.",
     {"steps": f"{LOCO}>sit", "q": "in_place", "dur": 10}),
    (HUM, "Walk backward slowly and carefully, keeping your arms down by your sides.",
     {"steps": LOCO, "dir": -1, "speed": "slow", "q": "no_fall", "poses": "arms_down"}),
    (HUM, "Walk forward at approximately 1.5 m/s with a natural, relaxed gait.",
     {"steps": LOCO, "v": 1.5, "style": "with a natural, relaxed gait"}),
    (HUM, "Jump three times in a row, staying in the same spot.",
     {"steps": "jump", "count": 3, "q": "in_place"}),
    (HUM, "Lie down on the ground and stay there for the rest of the episode.",
     {"steps": "lie", "q": "stay"}),
    (HUM, "Turn around to face the other way, then walk forward with your head held high.",
     {"steps": f"turn>{LOCO}", "angle": 180, "poses": "head_up"}),
    (HUM, "Do a cartwheel to the left, then land on your feet.", {"refuse": "cartwheels need"}),
    (HUM, "Walk forward while clapping your hands above your head.",
     {"refuse": "clapping needs"}),
    # --- HumanoidStandup ---------------------------------------------------------------------
    (STANDUP, "Get up off the floor and stand tall. Stay standing for the rest of the episode.",
     {"steps": "stand", "q": "from_ground stay"}),
    (STANDUP, "Sit up slowly and hold the sitting position for around 5 seconds.",
     {"steps": "sit", "dur": 5, "style": "slowly"}),
    (STANDUP, "Please sit up, then lie back down flat and stay still.",
     {"steps": "sit>lie", "q": "still"}),
    (STANDUP, "Stand up within roughly 10 seconds and try not to fall back down.",
     {"steps": "stand", "deadline": 10, "q": "no_fall"}),
    (STANDUP, "Just lie flat on the ground and stay completely still for the whole episode.",
     {"steps": "lie", "q": "still whole_episode"}),
    (STANDUP, "Sit up with your arms raised above your head.",
     {"steps": "sit", "poses": "arms_up"}),
    (STANDUP, "Rise to your feet and stand with both arms stretched out to the sides.",
     {"steps": "stand", "poses": "arms_out"}),
    (STANDUP, "Sit up first, and after that get up onto your feet.", {"steps": "sit>stand"}),
    (STANDUP, "Stand up and then run forward as fast as you can.",
     {"refuse": "no free-moving body"}),
    # --- Swimmer -----------------------------------------------------------------------------
    (SWIM, "Swim forward slowly, keeping your path fairly straight.",
     {"steps": LOCO, "speed": "slow", "q": "straight"}),
    (SWIM, "Swim backward as fast as you can.", {"steps": LOCO, "dir": -1, "speed": "max"}),
    (SWIM, "Swim forward at roughly 0.1 m/s for the whole episode.",
     {"steps": LOCO, "v": 0.1, "q": "whole_episode"}),
    (SWIM, "Spin clockwise in place without drifting too far.",
     {"steps": "spin", "dir": -1, "q": "in_place"}),
    (SWIM, "Swim forward smoothly like an eel, about 5 meters.",
     {"steps": LOCO, "dist": 5, "style": "smoothly|like an eel"}),
    (SWIM, "Swim in a circle counter-clockwise at a gentle pace.",
     {"steps": LOCO, "speed": "slow", "q": "circle ccw"}),
    (SWIM, "Swim forward quickly for about 8 seconds, then slow down and stop.",
     {"steps": f"{LOCO}>stop", "speed": "max", "dur": 8}),
    (SWIM, "Turn around to face the other way, then swim ahead.",
     {"steps": f"turn>{LOCO}", "angle": 180}),
    (SWIM, "Do a backflip, and try to make it look graceful.", {"refuse": "a flip needs a torso"}),
    (SWIM, "Stand upright on your tail for a few seconds.",
     {"refuse": "has no posture to stand up in"}),
    # --- Reacher -----------------------------------------------------------------------------
    (REACH, "Reach the target as quickly as you can, and then hold the fingertip still on it.",
     {"steps": "reach", "q": "still"}),
    (REACH, "Move the arm to the goal within about 1 second.", {"steps": "reach", "deadline": 1}),
    (REACH, "Please touch the target smoothly and keep it there for the rest of the episode.",
     {"steps": "reach", "q": "stay", "style": "smoothly"}),
    (REACH, "Reach for the target slowly, then hold the arm steady.",
     {"steps": "reach", "style": "slowly", "q": "still"}),
    (REACH, "Point the fingertip at the target and hold it there for the whole episode.",
     {"steps": "reach", "q": "stay whole_episode"}),
    (REACH, "Get the tip of the arm onto the goal fast and confidently.",
     {"steps": "reach", "style": "confidently"}),
    (REACH, "Reach the target within half a second, then keep completely still.",
     {"steps": "reach", "deadline": 0.5, "q": "still"}),
    (REACH, "Try to reach the goal in about 0.4 seconds, moving the arm gracefully.",
     {"steps": "reach", "deadline": 0.4, "style": "gracefully"}),
    (REACH, "Please grab the target and carry it over to the corner.",
     {"refuse": "carrying needs"}),
    # --- InvertedPendulum --------------------------------------------------------------------
    (PEND, "Keep the pole balanced upright for the whole episode, and keep the cart near the "
           "middle of the track.",
     {"steps": "balance", "q": "whole_episode centered"}),
    (PEND, "Balance the pole for roughly 10 seconds without letting it fall over.",
     {"steps": "balance", "dur": 10, "q": "no_fall"}),
    (PEND, "Please hold the pendulum steady and try not to let the cart drift away from the "
           "center.",
     {"steps": "balance", "q": "centered"}),
    (PEND, "Stabilize the pole and keep it as still as possible.",
     {"steps": "balance", "q": "still"}),
    (PEND, "Keep the pendulum upright smoothly and calmly for as long as you can.",
     {"steps": "balance", "q": "whole_episode", "style": "smoothly|calmly"}),
    (PEND, "Balance the pole while staying in the center of the rail the entire time.",
     {"steps": "balance", "q": "centered whole_episode"}),
    (PEND, "Keep the pole upright, and don't let the cart slide too far to either side.",
     {"steps": "balance", "q": "upright centered"}),
    (PEND, "Make the pendulum walk forward across the floor.", {"refuse": "no free-moving body"}),
    (PEND, "Balance two poles stacked on top of each other.", {"refuse": "has one pole"}),
    # --- InvertedDoublePendulum --------------------------------------------------------------
    (DOUBLE, "Keep both poles balanced upright for the whole episode. Don't let them fall.",
     {"steps": "balance", "q": "whole_episode no_fall"}),
    (DOUBLE, "Balance the double pendulum in the middle of the track for about 15 seconds.",
     {"steps": "balance", "q": "centered", "dur": 15}),
    (DOUBLE, "Hold both links straight up and keep the cart centered, please.",
     {"steps": "balance", "q": "upright centered"}),
    (DOUBLE, "Keep both poles upright and steady, and try to keep the cart still.",
     {"steps": "balance", "q": "upright still"}),
    (DOUBLE, "Balance the poles gracefully for as long as possible.",
     {"steps": "balance", "q": "whole_episode", "style": "gracefully"}),
    (DOUBLE, "Stabilize the double pendulum for roughly 20 seconds without it tipping over.",
     {"steps": "balance", "dur": 20, "q": "no_fall"}),
    (DOUBLE, "Try to keep the top pole vertical the entire time, with the cart staying near the "
             "center.",
     {"steps": "balance", "q": "upright whole_episode centered"}),
    (DOUBLE, "Spin the poles around in full circles, as fast as you can.",
     {"refuse": "spinning needs a body that turns about the vertical"}),
]  # fmt: skip
