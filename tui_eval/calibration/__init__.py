"""Is the judge right? Human labels of judged outputs (`labels`), which outputs to label
first (`label_queue`), and `calibrate()`, which re-judges labelled outputs and measures
judge–human agreement (`calibrate`).

May import the engine (`run`) and everything below it; never the services, the CLI or the app.
"""
