; OOM005 checkpoint-reentrant-default: a call whose callee is spelled `...checkpoint` or
; `...checkpoint_sequential`. The host resolves it to torch.utils.checkpoint and looks for
; an explicit `use_reentrant=`.
(call
  function: [(identifier) (attribute)] @callee
  arguments: (argument_list) @arguments
  (#match? @callee "checkpoint(_sequential)?$")) @call
