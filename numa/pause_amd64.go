package numa

// pause executes the processor's spin-wait hint (PAUSE) n times, n ≥ 1:
// a spinning worker then gives the execution resources of its core to a
// sibling hardware thread, which on a virtual machine may be another
// guest CPU doing the work waited for, and polls memory less often. Go
// has no portable form of it (the runtime's procyield is internal), hence
// these few lines of assembly.
//
//go:noescape
func pause(n uint32)
