package coordinator

// PackedOwners is an assignment (owners by slot) in compact form, as the
// coordinators store it: the workers it names once each, and per slot the
// index of its worker and the thread (-1: nobody). In JSON,
// {"workers":[…],"slots":[[w,t],…]}.
type PackedOwners struct {
	Workers []string `json:"workers"`
	Slots   [][2]int `json:"slots"`
}

// PackOwners returns owners in compact form.
func PackOwners(owners []Owner) PackedOwners {
	p := PackedOwners{Slots: make([][2]int, len(owners))}
	index := make(map[string]int)
	for i, o := range owners {
		if o.Worker == "" {
			p.Slots[i] = [2]int{-1, 0}
			continue
		}
		w, ok := index[o.Worker]
		if !ok {
			w = len(p.Workers)
			index[o.Worker] = w
			p.Workers = append(p.Workers, o.Worker)
		}
		p.Slots[i] = [2]int{w, o.Thread}
	}
	return p
}

// Owners returns the owners by slot (nobody for an index out of range).
func (p PackedOwners) Owners() []Owner {
	out := make([]Owner, len(p.Slots))
	for i, ws := range p.Slots {
		if ws[0] >= 0 && ws[0] < len(p.Workers) {
			out[i] = Owner{Worker: p.Workers[ws[0]], Thread: ws[1]}
		}
	}
	return out
}
