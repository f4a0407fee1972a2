"""`harness eval`: eval cases as data (``defaults/evals/<suite>/*.yaml``, the format of
``eval.cases``), trials on the embedded emulators (``pool``), pass rates with Wilson
intervals and one-component ablations with paired intervals (``stats``, ``runner``), the
markdown and the plot (``report``), and a closed case turned into a case (``export``)."""
