"""The answer contract: what is asked (`AskRequest`), what one ask came to (`Answered`,
`Refused`, `Abstained`, `Failed`), what PolicyDesk returns, shows and stores (`AskResult`,
`Claim`, `Citation`, `Passage`, `AnswerWarning`), the steps' values it is built from once, and
what version resolution and conflict flagging report (`report.ContextReport`).

Imported by every layer; it imports `storage` and `versions` only.
"""
