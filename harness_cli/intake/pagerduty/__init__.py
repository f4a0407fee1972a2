"""PagerDuty intake (reference, Layer 1): ``workflow`` holds the one path both doors share (the REST
poll and the webhook); ``incident`` parses what PagerDuty sends, ``rest`` talks to its API and
``surface`` posts the one message in a known case's thread."""
