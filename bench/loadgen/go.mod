module podsizer/bench/loadgen

go 1.22
