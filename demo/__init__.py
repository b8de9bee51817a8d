"""The pygame demo: two fighters seen from above (``python -m demo``).

The only package that imports pygame. ``demo.app`` holds the simulation the demo runs
(``DemoSim``: two fighters, the fight rules, the AI and the keyboard) and the window
(``App``); ``demo.render`` draws a snapshot of the world on a pygame Surface;
``demo.headless`` runs attract mode without a display and writes PNG frames, a contact
sheet and ``summary.json``.
"""
