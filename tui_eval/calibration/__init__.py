"""Is the judge right? Human labels of judged outputs (`labels`), which outputs to label
first (`label_queue`), `calibrate()`, which re-judges labelled outputs (`calibrate`), and
what it finds: judge–human agreement, per check and per juror (`results`).

May import the engine (`run`) and everything below it; never the services, the CLI or the app.
"""
