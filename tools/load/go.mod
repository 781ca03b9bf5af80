module podsizer.dev/tools/load

go 1.26.1
