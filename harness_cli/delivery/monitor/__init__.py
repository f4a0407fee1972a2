"""mr-monitor (reference, Layer 1 and Layer 4): ``cycle`` is one cycle over the monitored MRs;
``examine`` looks at one MR, ``decide`` holds the pure decisions, ``act`` does what they call
for, ``watch`` the cheap listings beside the MR listing, ``notices`` what is said when a loop
stops, ``thresholds`` the numbers behind the rules."""
