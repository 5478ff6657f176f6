"""Behaviours, the third stage: a read intent on an environment to what the reward is made of.
A single plain behaviour keeps a tuned template with its parameters and criteria (`Match`);
anything more is composed from the behaviour library: gaits, postures, motions, poses of the
body's parts and phased sequences, each adding weighted terms and criteria with their measures
(`Composition`). It hands those to the rendering stage, with the per-environment data (bodies,
template specs) that rendering reads.
"""
