package plan

// ShareAllPieces shares every piece SharePieces may share, whatever that
// does to LOAD, so that tests see as many shared views as they can.
func ShareAllPieces(p *Problem) error { return sharePieces(p, false) }
