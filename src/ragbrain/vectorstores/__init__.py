"""LangChain vector stores both ways: a caller's langchain-chroma ``Chroma`` under the whole
pipeline (``wrap``: ``CorrectiveRetriever.from_vectorstore``, its gate in ``gate``), and a
ragbrain store as a ``Chroma`` that LangChain code reads and writes (``chroma``:
``Store.as_vectorstore``)."""
