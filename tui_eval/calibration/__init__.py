"""Is the judge right? Human labels (`labels`), what to label first (`label_queue`),
`calibrate()` (`calibrate`) and judge–human agreement (`results`).

May import the engine (`run`) and below; never the services, the CLI or the app.
"""
