"""The pygame demo: two fighters seen from above (``scuffle demo``).

The only package that imports pygame. ``scuffle.demo.app`` holds the simulation the demo
runs (``DemoSim``: two fighters, the fight rules, the AI and the keyboard) and the window
(``App``); ``scuffle.demo.render`` draws a snapshot of the world on a pygame Surface;
``scuffle.demo.headless`` runs attract mode without a display and writes PNG frames, a
contact sheet and ``summary.json``; ``scuffle.demo.view`` is the clip viewer
(``scuffle view``); ``scuffle.demo.cli`` parses ``scuffle demo``'s arguments.
"""
