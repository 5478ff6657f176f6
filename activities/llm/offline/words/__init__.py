"""Words and numbers, the offline author's first stage: the lexicon's tables (verbs, qualifiers,
styles, filler; body parts and their poses), normalised tokens and lemmas, numbers with their
units read as quantities, and the refusal (`NotExpressible`, with the behaviours no reward here
can express) that every later stage raises. It hands the reading stage tokens and quantities.
"""
