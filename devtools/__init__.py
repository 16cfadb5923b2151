"""The project's own workshop tools, not shipped in the wheel: the bench (``make bench``), the
README's and docs' measured figures (``make figures``), the instructor guide's blocks
(``make guide``), the timed ``make lab`` start and the real room (``make test-room``, ``make
bench``). They run from a checkout
(``python -m devtools.<module>``) and import the library from :mod:`helpers`."""
