// Command vpa-estimate runs the Vertical Pod Autoscaler recommender's own estimator code
// (k8s.io/autoscaler/vertical-pod-autoscaler pkg/recommender/model and pkg/recommender/logic, with the
// recommender's default configuration) over per-minute usage samples read as JSON on stdin, and prints
// the target, lower and upper bound of every container as JSON on stdout.
//
// Input:  {"workloads": [{"key": "ns/Kind/name", "containers": [{"name": "app", "pods": [{"start": <unix s>,
//
//	"step": 60, "cpu": [cores...], "memory": [bytes...], "memory_request": <bytes>, "ooms": [<unix s>...]}]}]}]}
//
// Output: {"<key>/<container>": {"target": {"cpu": cores, "memory": bytes}, "lower": {...}, "upper": {...}}}
//
// Each pod gets its own model.ContainerState (per-pod memory peaks per 24 h interval, OOM bumps), all
// feeding one model.AggregateContainerState per workload container, as the recommender's cluster state
// does for the pods a VPA selects.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/logic"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/model"
)

type pod struct {
	Start         float64   `json:"start"`
	Step          float64   `json:"step"`
	CPU           []float64 `json:"cpu"`
	Memory        []float64 `json:"memory"`
	MemoryRequest float64   `json:"memory_request"`
	OOMs          []float64 `json:"ooms"`
}

type container struct {
	Name string `json:"name"`
	Pods []pod  `json:"pods"`
}

type workload struct {
	Key        string      `json:"key"`
	Containers []container `json:"containers"`
}

type input struct {
	Workloads []workload `json:"workloads"`
}

type amounts struct {
	CPU    float64 `json:"cpu"`
	Memory float64 `json:"memory"`
}

type bounds struct {
	Target amounts `json:"target"`
	Lower  amounts `json:"lower"`
	Upper  amounts `json:"upper"`
}

// defaultConfig is the recommender's default RecommendationConfig (pkg/recommender/config defaults:
// --recommendation-margin-fraction 0.15, --pod-recommendation-min-cpu-millicores 25,
// --pod-recommendation-min-memory-mb 250, percentiles 0.9 / 0.5 / 0.95, confidence intervals 24 h).
func defaultConfig() logic.RecommendationConfig {
	return logic.RecommendationConfig{
		SafetyMarginFraction:       0.15,
		PodMinCPUMillicores:        25,
		PodMinMemoryMb:             250,
		TargetCPUPercentile:        0.9,
		LowerBoundCPUPercentile:    0.5,
		UpperBoundCPUPercentile:    0.95,
		ConfidenceIntervalCPU:      24 * time.Hour,
		TargetMemoryPercentile:     0.9,
		LowerBoundMemoryPercentile: 0.5,
		UpperBoundMemoryPercentile: 0.95,
		ConfidenceIntervalMemory:   24 * time.Hour,
	}
}

func at(unix float64) time.Time {
	return time.Unix(0, int64(unix*1e9)).UTC()
}

// feed adds one pod's samples in time order to its own ContainerState, recording OOMs as the
// recommender's feeder does (after the sample of the minute they happened in).
func feed(p pod, agg *model.AggregateContainerState) {
	state := model.NewContainerState(model.Resources{
		model.ResourceMemory: model.MemoryAmountFromBytes(p.MemoryRequest),
	}, agg)
	step := p.Step
	if step <= 0 {
		step = 60
	}
	oom := 0
	for i := range p.CPU {
		ts := at(p.Start + float64(i)*step)
		state.AddSample(&model.ContainerUsageSample{
			MeasureStart: ts, Usage: model.CPUAmountFromCores(p.CPU[i]), Resource: model.ResourceCPU,
		})
		if i < len(p.Memory) {
			state.AddSample(&model.ContainerUsageSample{
				MeasureStart: ts, Usage: model.MemoryAmountFromBytes(p.Memory[i]), Resource: model.ResourceMemory,
			})
		}
		for oom < len(p.OOMs) && p.OOMs[oom] <= p.Start+float64(i)*step {
			_ = state.RecordOOM(at(p.OOMs[oom]), model.MemoryAmountFromBytes(p.MemoryRequest))
			oom++
		}
	}
}

func toAmounts(r model.Resources) amounts {
	return amounts{
		CPU:    model.CoresFromCPUAmount(r[model.ResourceCPU]),
		Memory: model.BytesFromMemoryAmount(r[model.ResourceMemory]),
	}
}

func run() error {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		return fmt.Errorf("reading input: %w", err)
	}
	recommender := logic.CreatePodResourceRecommender(defaultConfig())
	out := make(map[string]bounds)
	for _, w := range in.Workloads {
		states := make(model.ContainerNameToAggregateStateMap, len(w.Containers))
		for _, c := range w.Containers {
			agg := model.NewAggregateContainerState()
			for _, p := range c.Pods {
				feed(p, agg)
			}
			states[c.Name] = agg
		}
		// All containers of the workload in one call: the recommender divides the pod minimum
		// (25m, 250 MiB) among them.
		for name, r := range recommender.GetRecommendedPodResources(states) {
			out[w.Key+"/"+name] = bounds{
				Target: toAmounts(r.Target), Lower: toAmounts(r.LowerBound), Upper: toAmounts(r.UpperBound),
			}
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "vpa-estimate:", err)
		os.Exit(1)
	}
}
