// Package registry lists xmc's trainers: the one place that imports them
// all, so that the command line offers each under --algo and each package
// of an algorithm knows only the contract of package train.
package registry

import (
	"fmt"
	"strings"

	"xmc/train"
	"xmc/train/dismec"
	"xmc/train/forest"
	"xmc/train/lsq"
	"xmc/train/memoir"
	"xmc/train/pdsparse"
	"xmc/train/plt"
	"xmc/train/ppdsparse"
)

// Algorithm is one trainer xmc offers under --algo.
type Algorithm struct {
	// Name is the value of --algo, and the algorithm model headers record:
	// it never changes once models carry it.
	Name string
	// Summary says in a line of --help what the algorithm is.
	Summary string
	// New returns the trainer with its default hyper-parameters.
	New func() train.Trainer
}

// Algorithms lists xmc's trainers, in the order --help shows them. Adding a
// trainer is adding its package and its line here.
func Algorithms() []Algorithm {
	return []Algorithm{
		{"forest", "CRAFTML forest of random trees, as in DXML", forest.New},
		{"dismec", "one-vs-all squared hinge with L2, truncated Newton from the mean-separating initialisation", dismec.New},
		{"ppdsparse", "one-vs-all L1+L2 hinge or squared hinge, primal-dual sparse active set", ppdsparse.New},
		{"pdsparse", "multi-class (and multi-label) max-margin with L1+L2, PD-Sparse's primal-dual sparse dual block-coordinate steps over class blocks in synchronous rounds", pdsparse.New},
		{"memoir", "multi-class Crammer–Singer SVM by mini-batch SGD whose most violating class comes from an approximate maximum inner product search per class block (SimpleLSH or a small-world graph), in synchronous rounds", memoir.New},
		{"plt", "probabilistic label trees: a tree over the labels by balanced two-means, a logistic regression at every node, as napkinXC and Parabel", plt.New},
		{"lsq", "one-vs-all least squares by mini-batch gradient descent in synchronous rounds: the round mode's reference, a baseline", lsq.New},
	}
}

// Default is the --algo of a command line that names none.
const Default = "forest"

// Lookup returns the algorithm called name.
func Lookup(name string) (Algorithm, error) {
	var names []string
	for _, a := range Algorithms() {
		if a.Name == name {
			return a, nil
		}
		names = append(names, a.Name)
	}
	return Algorithm{}, fmt.Errorf("--algo %q: want one of %s", name, strings.Join(names, ", "))
}
