; OOM008 load-without-map-location: a call whose callee is spelled `load` or `...load`.
; The host resolves it to torch.load and looks for a map_location.
(call
  function: [(identifier) (attribute)] @callee
  arguments: (argument_list) @arguments
  (#match? @callee "(^|\\.)load$")) @call
