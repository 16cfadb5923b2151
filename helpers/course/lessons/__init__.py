"""Each notebook's plumbing behind one well-named call: the harnesses, tables and demonstrations
an attendee runs and reads the output of, but does not write (one module per notebook, named
after its lesson). A notebook's cells stay about five lines; what a cell calls here is what the
prose explains, and the code is here to read when an attendee wants it."""
