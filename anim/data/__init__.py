"""What a world is made from: clips and their codec, the Anim Range List, our resource file,
anim sets, playback rates, the clip lint, and the player's options.

Holds: animset, clip, lint, options, rangelist, rates, resource.
May import: scuffle.anim.base, scuffle.anim.maths, numpy.
"""
