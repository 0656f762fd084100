; OOM008 load-without-map-location: a call of `load(...)` or `<name>.load(...)`. The host
; resolves it to torch.load and looks for a map_location.
(call
  function: (attribute
    object: (identifier)
    attribute: (identifier) @method) @callee
  arguments: (argument_list) @arguments
  (#eq? @method "load")) @call

(call
  function: (identifier) @callee
  arguments: (argument_list) @arguments
  (#eq? @callee "load")) @call
