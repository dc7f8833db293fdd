"""The findings wing: one module per rule family, each holding the step that turns what the models found into
findings (`finding.Finding`) and the fixes it attaches. Every finding Kerncast reports is built here (a test
checks it), and each family is the one its rules name in `data/rules.toml` (`family`), so that a rule's
registry entry leads to its code.

The package imports none of its modules, so that importing one family does not load the others.
"""
