; OOM004 checkpoint-late-binding: a lambda or named function handed to
; `torch.utils.checkpoint.checkpoint` inside a loop or a comprehension. The host resolves the callee and
; finds loop variables the function captures by reference.
(call
  function: [(identifier) (attribute)] @callee
  arguments: (argument_list . [(lambda) (identifier)] @function)
  (#has-ancestor? @callee "for_statement" "while_statement" "list_comprehension" "generator_expression"
    "set_comprehension" "dictionary_comprehension")) @call
