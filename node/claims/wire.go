package claims

import "github.com/harn-dev/harn/node/claims/claimwire"

// The claims' values on the wire are claimwire's conversions.
var (
	ToAPI                 = claimwire.ToAPI
	FromAPI               = claimwire.FromAPI
	HoldersToAPI          = claimwire.HoldersToAPI
	HoldersFromAPI        = claimwire.HoldersFromAPI
	RegistryClaimsToAPI   = claimwire.RegistryClaimsToAPI
	RegistryClaimsFromAPI = claimwire.RegistryClaimsFromAPI
)
