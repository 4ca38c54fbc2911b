// Package ppdsparse trains PPDSparse (Yen et al., KDD 2017): one-vs-all
// linear classifiers with L1 and L2 regularisation, each solved in the
// dual by a greedy active-set method whose work grows with the label's
// positives and the few negatives near its margin, searched through an
// index of the features by column; blocks of labels are the units of work.
package ppdsparse
