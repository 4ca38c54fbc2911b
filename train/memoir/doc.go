// Package memoir trains MEMOIR (Belyy and Sholokhov, 2018): a multi-class
// Crammer–Singer SVM trained by mini-batch stochastic sub-gradient steps
// in which each row's most violating class comes from an approximate
// maximum inner product search (package mips) over the class vectors of
// each block of classes. Ranks own blocks and train in synchronous rounds.
package memoir
