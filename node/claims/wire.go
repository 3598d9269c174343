package claims

import "github.com/harn-dev/harn/node/claims/claimapi"

// The claims' values on the wire are claimwire's conversions.
var (
	ToAPI                 = claimapi.ToAPI
	FromAPI               = claimapi.FromAPI
	HoldersToAPI          = claimapi.HoldersToAPI
	HoldersFromAPI        = claimapi.HoldersFromAPI
	RegistryClaimsToAPI   = claimapi.RegistryClaimsToAPI
	RegistryClaimsFromAPI = claimapi.RegistryClaimsFromAPI
)
