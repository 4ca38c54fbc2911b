package slurm

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"xmc/internal/cli"
)

// ArrayTasks returns the task ids of a job array's Array field, in
// increasing order and each once: "1-5", "0,4,8", "0-15:4" (a step),
// "1-20%4" (at most 4 at once: the ids are 1 to 20).
func ArrayTasks(spec string) ([]int, error) {
	if !arrayRE.MatchString(spec) {
		return nil, fmt.Errorf("array %q: want task ids as sbatch --array takes them, e.g. 1-5, 0,4,8 or 1-20%%4", spec)
	}
	spec, _, _ = strings.Cut(spec, "%")
	var ids []int
	for _, part := range strings.Split(spec, ",") {
		rng, stepText, _ := strings.Cut(part, ":")
		loText, hiText, isRange := strings.Cut(rng, "-")
		lo, err := strconv.Atoi(loText)
		if err != nil {
			return nil, fmt.Errorf("array %q: %w", spec, err)
		}
		hi, step := lo, 1
		if isRange {
			if hi, err = strconv.Atoi(hiText); err != nil {
				return nil, fmt.Errorf("array %q: %w", spec, err)
			}
		}
		if stepText != "" {
			if step, err = strconv.Atoi(stepText); err != nil || step < 1 {
				return nil, fmt.Errorf("array %q: step %q: want a positive number", spec, stepText)
			}
		}
		if hi < lo || (hi-lo)/step >= maxArrayTasks-len(ids) {
			return nil, fmt.Errorf("array %q: range %s: want FIRST-LAST with FIRST ≤ LAST, %d tasks at most", spec, part, maxArrayTasks)
		}
		for id := lo; id <= hi; id += step {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// maxArrayTasks bounds the tasks of an array that ArrayTasks expands:
// Slurm's own default bound (MaxArraySize) is 1001.
const maxArrayTasks = 1 << 20

// MergeJob returns the job that joins the label-range models that the
// tasks of the array job j write (xmc train --label-range … --model-out
// with ArrayTask in the model's path) into the model out, with xmc merge:
// one task, with j's executable, partition, account, time and modules.
// Submit it to start after the array succeeds (SubmitOptions.AfterOK).
func MergeJob(j Job, out string) (Job, error) {
	if j.Array == "" || len(j.Args) == 0 || j.Args[0] != "train" {
		return Job{}, fmt.Errorf("a merge follows a job array of xmc train --label-range: give --array and a train command")
	}
	model, labels := cli.FlagValue(j.Args[1:], "model-out", ""), cli.FlagValue(j.Args[1:], "label-range", "")
	if !strings.Contains(model, ArrayTask) || labels == "" {
		return Job{}, fmt.Errorf("a merge needs each task's range model: give train --label-range and a --model-out with %s in it, e.g. --label-range %s/4 --model-out range-%s.model", ArrayTask, ArrayTask, ArrayTask)
	}
	tasks, err := ArrayTasks(j.Array)
	if err != nil {
		return Job{}, err
	}
	if err := checkParts(labels, tasks); err != nil {
		return Job{}, err
	}
	args := []string{"merge", "--out", out}
	for _, id := range tasks {
		args = append(args, strings.ReplaceAll(model, ArrayTask, strconv.Itoa(id)))
	}
	name := j.Name
	if name == "" {
		name = "xmc-train"
	}
	return Job{Name: name + "-merge", Nodes: 1, TasksPerNode: 1, CPUsPerTask: 1, Launcher: Direct,
		Partition: j.Partition, Account: j.Account, Time: j.Time, Modules: j.Modules, Exe: j.Exe, Args: args,
		Output: filepath.Join(filepath.Dir(out), "xmc-merge-%j.out")}, nil
}

// checkParts reports an error if a label range of the form {task}/N does
// not have the array's tasks number the N parts, 0 to N−1, each once: a
// part would be missing from the merge, or a task would fail.
func checkParts(labelRange string, tasks []int) error {
	task, parts, ok := strings.Cut(labelRange, "/")
	if !ok || task != ArrayTask {
		return nil
	}
	n, err := strconv.Atoi(parts)
	if err != nil || n < 1 {
		return fmt.Errorf("--label-range %s: want %s/N with N the number of parts", labelRange, ArrayTask)
	}
	if len(tasks) != n || tasks[0] != 0 || tasks[n-1] != n-1 {
		return fmt.Errorf("--label-range %s needs the array tasks 0-%d, one per part; the array has %d tasks from %d to %d", labelRange, n-1, len(tasks), tasks[0], tasks[len(tasks)-1])
	}
	return nil
}
