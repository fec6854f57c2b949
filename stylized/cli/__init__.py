"""The ``stylized`` command line (:func:`.app.main`), its option validation (:mod:`.validate`), compact tables
(:mod:`.table`) and ``figures`` (:mod:`.figures`)."""
