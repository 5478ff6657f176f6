"""Reading, the second stage: a sentence to its clauses and each clause to the step(s) it asks
for (`Step`: a behaviour with its direction, speed, numbers, qualifiers and poses), refusing,
by name, any word it cannot place. It hands the behaviours stage the read intent (`Parsed`), and
what a tuned template takes of it (`Intent`).
"""
