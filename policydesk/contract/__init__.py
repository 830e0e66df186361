"""The answer contract: what is asked (`AskRequest`), what one ask came to (`Answered`,
`Refused`, `Abstained`, `Failed`), what PolicyDesk returns, shows and stores (`AskResult`,
`Claim`, `Citation`, `Passage`, `AnswerWarning`), and the steps' values it is built from once.

Imported by every layer; it imports `storage` and `versions`, and `postprocessors` only for a
type (`steps.Context`).
"""
