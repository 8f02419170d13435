package upgrade

import (
	"fmt"
	"strconv"
	"strings"
)

// Budget is --max-unavailable: a number of nodes or a percentage of the
// GPU nodes.
type Budget struct {
	N       int
	Percent int // set when given as P%
}

// ParseBudget reads "N" or "P%".
func ParseBudget(s string) (Budget, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 100 {
			return Budget{}, fmt.Errorf("%q: want a number of nodes (1 or more) or a percentage from 1%% to 100%%", s)
		}
		return Budget{Percent: n}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return Budget{}, fmt.Errorf("%q: want a number of nodes (1 or more) or a percentage from 1%% to 100%%", s)
	}
	return Budget{N: n}, nil
}

// Of is the budget for total GPU nodes: a percentage rounds down (as a
// Deployment's maxUnavailable does), but never below one node, or nothing
// would ever be upgraded.
func (b Budget) Of(total int) int {
	if b.Percent == 0 {
		return b.N
	}
	return max(1, total*b.Percent/100)
}

func (b Budget) String() string {
	if b.Percent > 0 {
		return strconv.Itoa(b.Percent) + "%"
	}
	return strconv.Itoa(b.N)
}
