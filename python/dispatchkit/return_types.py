"""The named tuples of operators with several results (``dispatchkit.return_types.max``),
made by the extension module the first time such an operator returns, with the schema's
return names as fields: ``values, indices = dk.max(x, 1)``, ``dk.max(x, 1).indices``."""
