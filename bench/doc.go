// Package bench runs and reports xmc's scaling studies and comparisons. Its
// common currency is the run record every xmc command writes with
// --summary (job.Summary): the studies launch runs, read their summaries,
// and tabulate and plot them.
package bench
